start:
 setzi $m0, start
 br $m0
.worker
w: get $m1, $WSR
 bri start
.data
.p2align 3
x: .long 1, 2, (3 << 4) + 1
.space 16, 0xff
