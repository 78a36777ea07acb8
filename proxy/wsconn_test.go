package proxy

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// frame is one WebSocket frame as a server sends it: FIN, opcode, and the
// shortest length encoding for the payload; masked, if mask is set, as a
// client's would be.
func frame(opcode byte, payload []byte, mask bool) []byte {
	f := []byte{0x80 | opcode}
	var m byte
	if mask {
		m = 0x80
	}
	switch n := len(payload); {
	case n < 126:
		f = append(f, m|byte(n))
	case n <= 0xffff:
		f = append(f, m|126)
		f = binary.BigEndian.AppendUint16(f, uint16(n))
	default:
		f = append(f, m|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	if mask {
		f = append(f, 1, 2, 3, 4)
	}
	return append(f, payload...)
}

// frames are frames of the given payload lengths, and the offsets at which
// each ends.
func frames(lengths []int, mask bool) (stream []byte, ends []int) {
	for i, n := range lengths {
		stream = append(stream, frame(byte(1+i%2), bytes.Repeat([]byte{'x'}, n), mask)...)
		ends = append(ends, len(stream))
	}
	return stream, ends
}

// TestFrameCursorFindsEveryBoundary: however the relay's writes cut the
// byte stream, the cursor knows where each frame ends: after the 7-bit,
// 16-bit and 64-bit length forms, empty payloads and masked frames.
func TestFrameCursorFindsEveryBoundary(t *testing.T) {
	tests := []struct {
		name    string
		lengths []int
		mask    bool
	}{
		{"short frames", []int{0, 1, 125, 3}, false},
		{"16-bit lengths", []int{126, 300, 65535}, false},
		{"a 64-bit length", []int{65536, 2}, false},
		{"masked", []int{5, 126, 0}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream, ends := frames(tt.lengths, tt.mask)
			for _, chunk := range []int{1, 2, 7, 100, 4096, len(stream)} {
				var f frameCursor
				var got []int
				for off := 0; off < len(stream); {
					b := stream[off:min(off+chunk, len(stream))]
					if f.atBoundary() { // a frame begins: a frame is 2 bytes or more
						f.consume(b[:1])
						off++
						continue
					}
					// As a Write with a close frame pending does.
					off += f.untilBoundary(b)
					if f.atBoundary() {
						got = append(got, off)
					}
				}
				if !equalInts(got, ends) {
					t.Fatalf("chunks of %d: boundaries at %v, want %v", chunk, got, ends)
				}
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCloseFrame: code and reason in a close frame a client accepts; a
// reason longer than a control frame allows is cut between two characters.
func TestCloseFrame(t *testing.T) {
	f := closeFrame(1008, "token expired")
	if want := append([]byte{0x88, 15, 0x03, 0xf0}, "token expired"...); !bytes.Equal(f, want) {
		t.Fatalf("close frame % x, want % x", f, want)
	}
	long := closeFrame(1008, string(bytes.Repeat([]byte("é"), 100))) // 200 bytes
	if n := int(long[1]); n > 125 || n != len(long)-2 || (n-2)%2 != 0 {
		t.Fatalf("a long reason gave payload length %d (frame %d bytes): want at most 125, whole characters", n, len(long))
	}
}

// FuzzFrameCursor: the backend's bytes are not trusted; whatever they are,
// the cursor never panics, and it ends each frame where the frame's own
// header says.
func FuzzFrameCursor(f *testing.F) {
	f.Add([]byte{0x81, 0x05, 'h', 'e', 'l', 'l', 'o'}, uint8(3))
	f.Add([]byte{0x82, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, chunk uint8) {
		var c frameCursor
		step := int(chunk%32) + 1
		for off := 0; off < len(b); off += step {
			part := b[off:min(off+step, len(b))]
			n := c.untilBoundary(part)
			if n < 0 || n > len(part) {
				t.Fatalf("untilBoundary = %d of %d bytes", n, len(part))
			}
			c.consume(part[n:])
		}
	})
}
