// Made with IREE 3.13.0 (iree-base-compiler, 3.13.0rc20261016 @ 89ece87b) on 2026-11-27:
//   iree-compile program.mlir --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=host -o module.vmfb --mlir-print-ir-after-all --mlir-disable-threading
// math.erf is expanded by dump 400 of 714: MathTransformPass: iree-codegen-math-transform (IREE's pass that applies MLIR's math
// polynomial approximation patterns). Below: the dispatch function before and after it, verbatim.

// ----- IR Dump After ConvertComplexToStandardPass: convert-complex-to-standard{complex-range=improved}
func.func @main_dispatch_0_elementwise() {
  %c0 = arith.constant 0 : index
  %0 = hal.interface.binding.subspan layout(<bindings = [#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, Indirect>], flags = Indirect>) binding(0) alignment(64) offset(%c0) flags("ReadOnly|Indirect") : memref<f32>
  %assume_align = memref.assume_alignment %0, 64 : memref<f32>
  %1 = hal.interface.binding.subspan layout(<bindings = [#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, Indirect>], flags = Indirect>) binding(1) alignment(64) offset(%c0) flags(Indirect) : memref<f32>
  %assume_align_0 = memref.assume_alignment %1, 64 : memref<f32>
  %2 = memref.load %assume_align[] : memref<f32>
  %3 = math.erf %2 : f32
  memref.store %3, %assume_align_0[] : memref<f32>
  return
}

// ----- IR Dump After MathTransformPass: iree-codegen-math-transform
func.func @main_dispatch_0_elementwise() {
  %cst = arith.constant 3.750000e+00 : f32
  %cst_0 = arith.constant 2.000000e+00 : f32
  %cst_1 = arith.constant 8.000000e-01 : f32
  %cst_2 = arith.constant 0.0821908935 : f32
  %cst_3 = arith.constant -0.583389878 : f32
  %cst_4 = arith.constant 1.62705934 : f32
  %cst_5 = arith.constant -2.0606916 : f32
  %cst_6 = arith.constant 0.0572442785 : f32
  %cst_7 = arith.constant -0.0883462652 : f32
  %cst_8 = arith.constant 0.448369086 : f32
  %cst_9 = arith.constant -3.276070e-01 : f32
  %cst_10 = arith.constant 0.0739796459 : f32
  %cst_11 = arith.constant -0.131808966 : f32
  %cst_12 = arith.constant 0.519230127 : f32
  %cst_13 = arith.constant -0.463513821 : f32
  %cst_14 = arith.constant -1.71048032E-5 : f32
  %cst_15 = arith.constant 2.53447099E-4 : f32
  %cst_16 = arith.constant -0.00141373626 : f32
  %cst_17 = arith.constant 0.00351961935 : f32
  %cst_18 = arith.constant -0.00330093061 : f32
  %cst_19 = arith.constant 0.0370645523 : f32
  %cst_20 = arith.constant 0.118407398 : f32
  %cst_21 = arith.constant -0.364721417 : f32
  %cst_22 = arith.constant 1.12750685 : f32
  %cst_23 = arith.constant 0.0258146804 : f32
  %cst_24 = arith.constant 0.209741712 : f32
  %cst_25 = arith.constant -0.523018539 : f32
  %cst_26 = arith.constant 1.12837911 : f32
  %cst_27 = arith.constant 1.000000e+00 : f32
  %cst_28 = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %0 = hal.interface.binding.subspan layout(<bindings = [#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, Indirect>], flags = Indirect>) binding(0) alignment(64) offset(%c0) flags("ReadOnly|Indirect") : memref<f32>
  %assume_align = memref.assume_alignment %0, 64 : memref<f32>
  %1 = hal.interface.binding.subspan layout(<bindings = [#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, Indirect>], flags = Indirect>) binding(1) alignment(64) offset(%c0) flags(Indirect) : memref<f32>
  %assume_align_29 = memref.assume_alignment %1, 64 : memref<f32>
  %2 = memref.load %assume_align[] : memref<f32>
  %3 = arith.cmpf olt, %2, %cst_28 : f32
  %4 = arith.negf %2 : f32
  %5 = arith.select %3, %4, %2 : f32
  %6 = arith.cmpf olt, %5, %cst_1 : f32
  %7 = arith.select %6, %cst_26, %cst_22 : f32
  %8 = arith.select %6, %cst_13, %cst_9 : f32
  %9 = arith.select %6, %cst_25, %cst_21 : f32
  %10 = arith.select %6, %cst_12, %cst_8 : f32
  %11 = arith.select %6, %cst_24, %cst_20 : f32
  %12 = arith.select %6, %cst_11, %cst_7 : f32
  %13 = arith.select %6, %cst_23, %cst_19 : f32
  %14 = arith.select %6, %cst_10, %cst_6 : f32
  %15 = arith.cmpf olt, %5, %cst_0 : f32
  %16 = arith.select %15, %cst_28, %cst_18 : f32
  %17 = arith.select %15, %7, %cst_17 : f32
  %18 = arith.select %15, %8, %cst_5 : f32
  %19 = arith.select %15, %9, %cst_16 : f32
  %20 = arith.select %15, %10, %cst_4 : f32
  %21 = arith.select %15, %11, %cst_15 : f32
  %22 = arith.select %15, %12, %cst_3 : f32
  %23 = arith.select %15, %13, %cst_14 : f32
  %24 = arith.select %15, %14, %cst_2 : f32
  %25 = arith.select %15, %cst_28, %cst_27 : f32
  %26 = arith.cmpf ult, %5, %cst : f32
  %27 = math.fma %5, %23, %21 : f32
  %28 = math.fma %5, %27, %19 : f32
  %29 = math.fma %5, %28, %17 : f32
  %30 = math.fma %5, %29, %16 : f32
  %31 = math.fma %5, %24, %22 : f32
  %32 = math.fma %5, %31, %20 : f32
  %33 = math.fma %5, %32, %18 : f32
  %34 = math.fma %5, %33, %cst_27 : f32
  %35 = arith.divf %30, %34 : f32
  %36 = arith.addf %25, %35 : f32
  %37 = arith.select %26, %36, %cst_27 : f32
  %38 = arith.negf %37 : f32
  %39 = arith.select %3, %38, %37 : f32
  memref.store %39, %assume_align_29[] : memref<f32>
  return
}
