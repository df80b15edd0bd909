// Made with IREE 3.13.0 (iree-base-compiler, 3.13.0rc20261016 @ 89ece87b) on 2026-11-27:
//   iree-compile program.mlir --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=host -o module.vmfb --mlir-print-ir-after-all --mlir-disable-threading
// The first pass after which the dispatch has an f32 mulf and no bf16 one is dump 392 of 714: ConvertBf16ArithToF32Pass: iree-convert-bf16-arith-to-f32.
// Below: the dispatch function after the pass before it (ConvertLinalgToLoopsPass: convert-linalg-to-loops) and after it, verbatim.

// ----- IR Dump After ConvertLinalgToLoopsPass: convert-linalg-to-loops
func.func @rowexpandmul_fillpad_dispatch_0_elementwise() {
  %c0 = arith.constant 0 : index
  %0 = hal.interface.binding.subspan layout(<bindings = [#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, Indirect>], flags = Indirect>) binding(0) alignment(64) offset(%c0) flags("ReadOnly|Indirect") : memref<f32>
  %assume_align = memref.assume_alignment %0, 64 : memref<f32>
  %1 = hal.interface.binding.subspan layout(<bindings = [#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, Indirect>], flags = Indirect>) binding(1) alignment(64) offset(%c0) flags("ReadOnly|Indirect") : memref<f32>
  %assume_align_0 = memref.assume_alignment %1, 64 : memref<f32>
  %2 = hal.interface.binding.subspan layout(<bindings = [#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, Indirect>], flags = Indirect>) binding(2) alignment(64) offset(%c0) flags(Indirect) : memref<f32>
  %assume_align_1 = memref.assume_alignment %2, 64 : memref<f32>
  %3 = memref.load %assume_align[] : memref<f32>
  %4 = memref.load %assume_align_0[] : memref<f32>
  %5 = arith.truncf %3 : f32 to bf16
  %6 = arith.truncf %4 : f32 to bf16
  %7 = arith.mulf %5, %6 : bf16
  %8 = arith.extf %7 : bf16 to f32
  memref.store %8, %assume_align_1[] : memref<f32>
  return
}

// ----- IR Dump After ConvertBf16ArithToF32Pass: iree-convert-bf16-arith-to-f32
func.func @rowexpandmul_fillpad_dispatch_0_elementwise() {
  %c0 = arith.constant 0 : index
  %0 = hal.interface.binding.subspan layout(<bindings = [#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, Indirect>], flags = Indirect>) binding(0) alignment(64) offset(%c0) flags("ReadOnly|Indirect") : memref<f32>
  %assume_align = memref.assume_alignment %0, 64 : memref<f32>
  %1 = hal.interface.binding.subspan layout(<bindings = [#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, Indirect>], flags = Indirect>) binding(1) alignment(64) offset(%c0) flags("ReadOnly|Indirect") : memref<f32>
  %assume_align_0 = memref.assume_alignment %1, 64 : memref<f32>
  %2 = hal.interface.binding.subspan layout(<bindings = [#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, Indirect>], flags = Indirect>) binding(2) alignment(64) offset(%c0) flags(Indirect) : memref<f32>
  %assume_align_1 = memref.assume_alignment %2, 64 : memref<f32>
  %3 = memref.load %assume_align[] : memref<f32>
  %4 = memref.load %assume_align_0[] : memref<f32>
  %5 = arith.mulf %3, %4 : f32
  memref.store %5, %assume_align_1[] : memref<f32>
  return
}
