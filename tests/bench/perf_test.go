package main

import (
	"reflect"
	"testing"
)

func TestParsePerfScript(t *testing.T) {
	out := "22519 \n" +
		"\t         347d72c (/tools/kube-apiserver)\n" +
		"\t          288385 (/tools/kube-apiserver)\n" +
		"\n" +
		"  600 \n" +
		"\t        ffffffff8100 ([kernel.kallsyms])\n" +
		"\t          2c3bfe (/tools/temporal)\n" +
		"\tnot-an-address (/tools/temporal)\n" +
		"\n"
	got := parsePerfScript([]byte(out))
	want := []perfSample{
		{pid: 22519, frames: []perfFrame{{0x347d72c, "/tools/kube-apiserver"}, {0x288385, "/tools/kube-apiserver"}}},
		{pid: 600, frames: []perfFrame{{0xffffffff8100, "[kernel.kallsyms]"}, {0x2c3bfe, "/tools/temporal"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parsePerfScript:\n got %+v\nwant %+v", got, want)
	}
}

func TestPerfSharesCountsARecursiveFunctionOncePerSample(t *testing.T) {
	name := map[uint64]string{1: "encode", 2: "marshal", 3: "handler", 4: "decode"}
	frames := func(offs ...uint64) []perfFrame {
		var fs []perfFrame
		for _, o := range offs {
			fs = append(fs, perfFrame{offset: o, dso: "bin"})
		}
		return fs
	}
	samples := []perfSample{
		{frames: frames(1, 2, 1, 2, 3)}, // encode → marshal → encode → marshal → handler
		{frames: frames(4, 3)},
		{frames: nil}, // a sample perf could not unwind
	}
	self, incl := perfShares(samples, func(f perfFrame) string { return name[f.offset] })
	if want := map[string]int{"encode": 1, "decode": 1}; !reflect.DeepEqual(self, want) {
		t.Errorf("self = %v, want %v", self, want)
	}
	if want := map[string]int{"encode": 1, "marshal": 1, "handler": 2, "decode": 1}; !reflect.DeepEqual(incl, want) {
		t.Errorf("inclusive = %v, want %v", incl, want)
	}
}
