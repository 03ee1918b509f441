#include "textflag.h"

// func hintOnce(p *byte)
TEXT ·hintOnce(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	PREFETCHNTA (AX)
	PREFETCHNTA 64(AX)
	RET
