package main

// The work of examples/spin.c: us*spinStepsPerUs steps of a 32-bit linear
// congruential generator on 128 lanes, checksummed the same way.  With
// AVX-512F the lanes are eight ZMM registers (spin_amd64.s), as in C; with
// AVX2 eight YMM registers, one half of the lanes after the other.  Go preempts a goroutine only in Go code
// and keeps only X0-X15 when it does, so the assembly runs one
// microsecond's steps per call, with the lanes in memory between calls: the
// goroutine may be preempted between them.

const (
	spinStepsPerUs = 400 // examples/spin.h's SPIN_STEPS_PER_US
	lcgMul         = 1664525
	lcgAdd         = 1013904223
)

var (
	haveAVX512F = hasAVX512F()
	haveAVX2    = hasAVX2()
)

// hasAVX512F reports whether the CPU has AVX-512F and the kernel saves
// its state (XCR0's opmask and ZMM bits).
func hasAVX512F() bool

// hasAVX2 reports whether the CPU has AVX2 and the kernel saves YMM state.
func hasAVX2() bool

// spinStepsAVX2 runs steps steps on the 128 lanes, 64 at a time in eight
// YMM registers (AVX2 only).
//
//go:noescape
func spinStepsAVX2(lanes *[128]uint32, steps uint64)

// spinSteps runs steps steps on the 128 lanes (AVX-512F only).
//
//go:noescape
func spinSteps(lanes *[128]uint32, steps uint64)

func spinWork(us uint64) uint64 {
	var lanes [128]uint32
	for i := range lanes {
		lanes[i] = uint32(i + 1)
	}
	for i := uint64(0); i < us; i++ {
		if haveAVX512F {
			spinSteps(&lanes, spinStepsPerUs)
			continue
		}
		if haveAVX2 {
			spinStepsAVX2(&lanes, spinStepsPerUs)
			continue
		}
		for s := 0; s < spinStepsPerUs; s++ {
			for j := range lanes {
				lanes[j] = lanes[j]*lcgMul + lcgAdd
			}
		}
	}
	var sum uint64
	for _, v := range lanes {
		sum = sum*31 + uint64(v)
	}
	return sum
}
