.section .rodata
.balign 64
.globl accel_input_0
accel_input_0:
.incbin "input_0.bin"
