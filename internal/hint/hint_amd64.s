#include "textflag.h"

// func Lines(p *byte)
TEXT ·Lines(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	PREFETCHNTA (AX)
	PREFETCHNTA 64(AX)
	RET

// func Line(p *byte)
TEXT ·Line(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	RET
