package sidecar

import "syscall"

// sysFstatat is fstatat(2) (newfstatat on amd64).
const sysFstatat = syscall.SYS_NEWFSTATAT
