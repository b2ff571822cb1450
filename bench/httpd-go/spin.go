package main

// The work of examples/spin.c: us*spinStepsPerUs steps of a 32-bit linear
// congruential generator on 128 lanes, checksummed the same way.  With
// AVX-512F the lanes are eight ZMM registers (spin_amd64.s), as in C; with
// AVX2 eight YMM registers, one half of the lanes after the other.  Go
// preempts a goroutine only in Go code and keeps only X0-X15 when it does,
// so the assembly runs one microsecond's steps per call, with the lanes in
// memory between calls: the goroutine may be preempted between them.

const (
	spinStepsPerUs = 400 // examples/spin.h's SPIN_STEPS_PER_US
	lcgMul         = 1664525
	lcgAdd         = 1013904223
)

var haveAVX512F, haveAVX2 = vectorSupport()

func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

func xcr0() uint32

// vectorSupport reports AVX-512F and AVX2 where the CPU has them and the
// kernel saves their state (XCR0), as GCC's __builtin_cpu_supports decides
// for examples/spin.c.
func vectorSupport() (avx512f, avx2 bool) {
	maxLeaf, _, _, _ := cpuid(0, 0)
	_, _, ecx1, _ := cpuid(1, 0)
	if maxLeaf < 7 || ecx1&(1<<27) == 0 { // OSXSAVE: XGETBV may be used
		return false, false
	}
	saved := xcr0()
	_, ebx7, _, _ := cpuid(7, 0)
	avx2 = saved&0x6 == 0x6 && ebx7&(1<<5) != 0       // SSE, AVX state
	avx512f = saved&0xe6 == 0xe6 && ebx7&(1<<16) != 0 // and opmask, ZMM
	return avx512f, avx2
}

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
