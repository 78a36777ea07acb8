package v1alpha1

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fill sets every settable field below v to a non-zero value, so that a
// field added to the types without its deep copy shows up as shared.
func fill(v reflect.Value, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[metav1.Time]() {
			v.Set(reflect.ValueOf(metav1.NewTime(time.Unix(1700000000, 0))))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	}
}

// pointers collects the addresses of every pointer, slice and map below v.
func pointers(v reflect.Value, into map[uintptr]string, path string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			into[v.Pointer()] = path
			pointers(v.Elem(), into, path)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				pointers(v.Field(i), into, path+"."+v.Type().Field(i).Name)
			}
		}
	case reflect.Slice:
		if !v.IsNil() && v.Len() > 0 {
			into[v.Pointer()] = path
			for i := range v.Len() {
				pointers(v.Index(i), into, path+"[]")
			}
		}
	case reflect.Map:
		if !v.IsNil() {
			into[v.Pointer()] = path
		}
	}
}

func TestDeepCopySharesNothing(t *testing.T) {
	var b PolicyBundle
	fill(reflect.ValueOf(&b).Elem(), 0)
	c := b.DeepCopy()
	if !equality.Semantic.DeepEqual(&b, c) {
		t.Fatalf("copy differs from the original:\n%+v\n%+v", b, *c)
	}
	orig, copied := map[uintptr]string{}, map[uintptr]string{}
	pointers(reflect.ValueOf(&b).Elem(), orig, "PolicyBundle")
	pointers(reflect.ValueOf(c).Elem(), copied, "PolicyBundle")
	for p, path := range copied {
		if _, shared := orig[p]; shared {
			t.Errorf("%s is shared between the copy and the original", path)
		}
	}

	list := &PolicyBundleList{Items: []PolicyBundle{b}}
	lc := list.DeepCopyObject().(*PolicyBundleList)
	lc.Items[0].Spec.SecretRef.Name = "changed"
	if list.Items[0].Spec.SecretRef.Name != "x" {
		t.Error("copy of a PolicyBundleList shares its items")
	}
}
