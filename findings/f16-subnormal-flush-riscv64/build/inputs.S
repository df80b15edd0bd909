.section .rodata
.balign 64
.globl accel_input_0
accel_input_0:
.incbin "input_0.bin"
.balign 64
.globl accel_input_1
accel_input_1:
.incbin "input_1.bin"
.balign 64
.globl accel_input_2
accel_input_2:
.incbin "input_2.bin"
.balign 64
.globl accel_input_3
accel_input_3:
.incbin "input_3.bin"
.balign 64
.globl accel_input_4
accel_input_4:
.incbin "input_4.bin"
