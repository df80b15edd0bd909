// Made with IREE 3.13.0 (iree-base-compiler, 3.13.0rc20261016 @ 89ece87b) on 2026-12-02, lavapipe host:
//   iree-compile program.mlir --iree-hal-target-device=vulkan -o module.vmfb --mlir-print-ir-after-all --mlir-disable-threading
// arith.extsi is in every dump up to the input of dump 446 of 741: ConvertToSPIRVPass: iree-convert-to-spirv, after
// which the bitcast lanes are spirv.BitwiseAnd + spirv.ShiftRightLogical with no sign extension (the rewrite inside the
// pass: ISSUE.md). Below: the IR before and after that pass, verbatim.

// ----- IR Dump After SPIRVConvertGPUTargetPass: iree-spirv-convert-gpu-target
module attributes {hal.executable.target = #hal.executable.target<"vulkan-spirv", "vulkan-spirv-fb", {iree_codegen.target_info = #iree_gpu.target<arch = "vp_android_baseline_2022", features = "spirv:v1.3,cap:Shader", wgp = <compute = fp32|int32, storage = b32, subgroup = none, subgroup_size_choices = [64], max_workgroup_sizes = [128, 128, 64], max_thread_count_per_workgroup = 128, max_workgroup_memory_bytes = 16384, max_workgroup_counts = [65535, 65535, 65535]>>}>, spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader], []>, #spirv.resource_limits<subgroup_size = 64, min_subgroup_size = 64, max_subgroup_size = 64, cooperative_matrix_properties_khr = []>>} {
  func.func @mm_dispatch_0_matmul_16x16x128_i8xi8xi32() attributes {gpu.known_block_size = array<i32: 2, 16, 1>, hal.executable.target = #hal.executable.target<"vulkan-spirv", "vulkan-spirv-fb", {iree_codegen.target_info = #iree_gpu.target<arch = "vp_android_baseline_2022", features = "spirv:v1.3,cap:Shader", wgp = <compute = fp32|int32, storage = b32, subgroup = none, subgroup_size_choices = [64], max_workgroup_sizes = [128, 128, 64], max_thread_count_per_workgroup = 128, max_workgroup_memory_bytes = 16384, max_workgroup_counts = [65535, 65535, 65535]>>}>} {
    %c2_i32 = arith.constant 2 : i32
    %c1_i32 = arith.constant 1 : i32
    %c14_i32 = arith.constant 14 : i32
    %c12_i32 = arith.constant 12 : i32
    %c10_i32 = arith.constant 10 : i32
    %c6_i32 = arith.constant 6 : i32
    %c4_i32 = arith.constant 4 : i32
    %c16_i32 = arith.constant 16 : i32
    %c8_i32 = arith.constant 8 : i32
    %c128_i32 = arith.constant 128 : i32
    %c0_i32 = arith.constant 0 : i32
    %c64 = arith.constant 64 : index
    %cst = arith.constant dense<0> : vector<4xi32>
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %0 = hal.interface.binding.subspan layout(<bindings = [#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, Indirect>], flags = Indirect>) binding(0) alignment(64) offset(%c0) flags("ReadOnly|Indirect") : memref<?xvector<2xi32>, #spirv.storage_class<StorageBuffer>>{%c256}
    %1 = hal.interface.binding.subspan layout(<bindings = [#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, Indirect>], flags = Indirect>) binding(1) alignment(64) offset(%c0) flags("ReadOnly|Indirect") : memref<?xvector<2xi32>, #spirv.storage_class<StorageBuffer>>{%c256}
    %2 = hal.interface.binding.subspan layout(<bindings = [#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, #hal.pipeline.binding<storage_buffer, Indirect>], flags = Indirect>) binding(2) alignment(64) offset(%c0) flags(Indirect) : memref<?xvector<4xi32>, #spirv.storage_class<StorageBuffer>>{%c64}
    %thread_id_y = gpu.thread_id y upper_bound 16
    %thread_id_x = gpu.thread_id x upper_bound 2
    %3:2 = scf.for %arg0 = %c0_i32 to %c128_i32 step %c8_i32 iter_args(%arg1 = %cst, %arg2 = %cst) -> (vector<4xi32>, vector<4xi32>)  : i32 {
      %12 = arith.index_castui %thread_id_y : index to i32
      %13 = arith.muli %12, %c16_i32 overflow<nsw> : i32
      %14 = arith.divui %arg0, %c8_i32 : i32
      %15 = arith.addi %13, %14 : i32
      %16 = arith.index_castui %15 : i32 to index
      %17 = memref.load %0[%16] : memref<?xvector<2xi32>, #spirv.storage_class<StorageBuffer>>
      %18 = arith.muli %arg0, %c2_i32 overflow<nsw> : i32
      %19 = arith.index_castui %thread_id_x : index to i32
      %20 = arith.addi %18, %19 : i32
      %21 = arith.index_castui %20 : i32 to index
      %22 = memref.load %1[%21] : memref<?xvector<2xi32>, #spirv.storage_class<StorageBuffer>>
      %23 = arith.addi %20, %c2_i32 : i32
      %24 = arith.index_castui %23 : i32 to index
      %25 = memref.load %1[%24] : memref<?xvector<2xi32>, #spirv.storage_class<StorageBuffer>>
      %26 = arith.addi %20, %c4_i32 : i32
      %27 = arith.index_castui %26 : i32 to index
      %28 = memref.load %1[%27] : memref<?xvector<2xi32>, #spirv.storage_class<StorageBuffer>>
      %29 = arith.addi %20, %c6_i32 : i32
      %30 = arith.index_castui %29 : i32 to index
      %31 = memref.load %1[%30] : memref<?xvector<2xi32>, #spirv.storage_class<StorageBuffer>>
      %32 = arith.addi %20, %c8_i32 : i32
      %33 = arith.index_castui %32 : i32 to index
      %34 = memref.load %1[%33] : memref<?xvector<2xi32>, #spirv.storage_class<StorageBuffer>>
      %35 = arith.addi %20, %c10_i32 : i32
      %36 = arith.index_castui %35 : i32 to index
      %37 = memref.load %1[%36] : memref<?xvector<2xi32>, #spirv.storage_class<StorageBuffer>>
      %38 = arith.addi %20, %c12_i32 : i32
      %39 = arith.index_castui %38 : i32 to index
      %40 = memref.load %1[%39] : memref<?xvector<2xi32>, #spirv.storage_class<StorageBuffer>>
      %41 = arith.addi %20, %c14_i32 : i32
      %42 = arith.index_castui %41 : i32 to index
      %43 = memref.load %1[%42] : memref<?xvector<2xi32>, #spirv.storage_class<StorageBuffer>>
      %44 = vector.extract_strided_slice %17 offsets = [0], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %45 = vector.bitcast %44 : vector<1xi32> to vector<4xi8>
      %46 = arith.extsi %45 : vector<4xi8> to vector<4xi32>
      %47 = vector.extract_strided_slice %17 offsets = [1], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %48 = vector.bitcast %47 : vector<1xi32> to vector<4xi8>
      %49 = arith.extsi %48 : vector<4xi8> to vector<4xi32>
      %50 = vector.extract_strided_slice %22 offsets = [0], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %51 = vector.bitcast %50 : vector<1xi32> to vector<4xi8>
      %52 = arith.extsi %51 : vector<4xi8> to vector<4xi32>
      %53 = vector.extract_strided_slice %22 offsets = [1], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %54 = vector.bitcast %53 : vector<1xi32> to vector<4xi8>
      %55 = arith.extsi %54 : vector<4xi8> to vector<4xi32>
      %56 = vector.extract_strided_slice %25 offsets = [0], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %57 = vector.bitcast %56 : vector<1xi32> to vector<4xi8>
      %58 = arith.extsi %57 : vector<4xi8> to vector<4xi32>
      %59 = vector.extract_strided_slice %25 offsets = [1], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %60 = vector.bitcast %59 : vector<1xi32> to vector<4xi8>
      %61 = arith.extsi %60 : vector<4xi8> to vector<4xi32>
      %62 = vector.extract_strided_slice %28 offsets = [0], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %63 = vector.bitcast %62 : vector<1xi32> to vector<4xi8>
      %64 = arith.extsi %63 : vector<4xi8> to vector<4xi32>
      %65 = vector.extract_strided_slice %28 offsets = [1], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %66 = vector.bitcast %65 : vector<1xi32> to vector<4xi8>
      %67 = arith.extsi %66 : vector<4xi8> to vector<4xi32>
      %68 = vector.extract_strided_slice %31 offsets = [0], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %69 = vector.bitcast %68 : vector<1xi32> to vector<4xi8>
      %70 = arith.extsi %69 : vector<4xi8> to vector<4xi32>
      %71 = vector.extract_strided_slice %31 offsets = [1], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %72 = vector.bitcast %71 : vector<1xi32> to vector<4xi8>
      %73 = arith.extsi %72 : vector<4xi8> to vector<4xi32>
      %74 = vector.extract_strided_slice %34 offsets = [0], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %75 = vector.bitcast %74 : vector<1xi32> to vector<4xi8>
      %76 = arith.extsi %75 : vector<4xi8> to vector<4xi32>
      %77 = vector.extract_strided_slice %34 offsets = [1], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %78 = vector.bitcast %77 : vector<1xi32> to vector<4xi8>
      %79 = arith.extsi %78 : vector<4xi8> to vector<4xi32>
      %80 = vector.extract_strided_slice %37 offsets = [0], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %81 = vector.bitcast %80 : vector<1xi32> to vector<4xi8>
      %82 = arith.extsi %81 : vector<4xi8> to vector<4xi32>
      %83 = vector.extract_strided_slice %37 offsets = [1], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %84 = vector.bitcast %83 : vector<1xi32> to vector<4xi8>
      %85 = arith.extsi %84 : vector<4xi8> to vector<4xi32>
      %86 = vector.extract_strided_slice %40 offsets = [0], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %87 = vector.bitcast %86 : vector<1xi32> to vector<4xi8>
      %88 = arith.extsi %87 : vector<4xi8> to vector<4xi32>
      %89 = vector.extract_strided_slice %40 offsets = [1], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %90 = vector.bitcast %89 : vector<1xi32> to vector<4xi8>
      %91 = arith.extsi %90 : vector<4xi8> to vector<4xi32>
      %92 = vector.extract_strided_slice %43 offsets = [0], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %93 = vector.bitcast %92 : vector<1xi32> to vector<4xi8>
      %94 = arith.extsi %93 : vector<4xi8> to vector<4xi32>
      %95 = vector.extract_strided_slice %43 offsets = [1], sizes = [1], strides = [1] : vector<2xi32> to vector<1xi32>
      %96 = vector.bitcast %95 : vector<1xi32> to vector<4xi8>
      %97 = arith.extsi %96 : vector<4xi8> to vector<4xi32>
      %98 = vector.extract %46[0] : i32 from vector<4xi32>
      %99 = vector.broadcast %98 : i32 to vector<4xi32>
      %100 = arith.muli %99, %52 : vector<4xi32>
      %101 = arith.addi %100, %arg1 : vector<4xi32>
      %102 = vector.extract %46[1] : i32 from vector<4xi32>
      %103 = vector.broadcast %102 : i32 to vector<4xi32>
      %104 = arith.muli %103, %58 : vector<4xi32>
      %105 = arith.addi %104, %101 : vector<4xi32>
      %106 = vector.extract %46[2] : i32 from vector<4xi32>
      %107 = vector.broadcast %106 : i32 to vector<4xi32>
      %108 = arith.muli %107, %64 : vector<4xi32>
      %109 = arith.addi %108, %105 : vector<4xi32>
      %110 = vector.extract %46[3] : i32 from vector<4xi32>
      %111 = vector.broadcast %110 : i32 to vector<4xi32>
      %112 = arith.muli %111, %70 : vector<4xi32>
      %113 = arith.addi %112, %109 : vector<4xi32>
      %114 = vector.extract %49[0] : i32 from vector<4xi32>
      %115 = vector.broadcast %114 : i32 to vector<4xi32>
      %116 = arith.muli %115, %76 : vector<4xi32>
      %117 = arith.addi %116, %113 : vector<4xi32>
      %118 = vector.extract %49[1] : i32 from vector<4xi32>
      %119 = vector.broadcast %118 : i32 to vector<4xi32>
      %120 = arith.muli %119, %82 : vector<4xi32>
      %121 = arith.addi %120, %117 : vector<4xi32>
      %122 = vector.extract %49[2] : i32 from vector<4xi32>
      %123 = vector.broadcast %122 : i32 to vector<4xi32>
      %124 = arith.muli %123, %88 : vector<4xi32>
      %125 = arith.addi %124, %121 : vector<4xi32>
      %126 = vector.extract %49[3] : i32 from vector<4xi32>
      %127 = vector.broadcast %126 : i32 to vector<4xi32>
      %128 = arith.muli %127, %94 : vector<4xi32>
      %129 = arith.addi %128, %125 : vector<4xi32>
      %130 = arith.muli %99, %55 : vector<4xi32>
      %131 = arith.addi %130, %arg2 : vector<4xi32>
      %132 = arith.muli %103, %61 : vector<4xi32>
      %133 = arith.addi %132, %131 : vector<4xi32>
      %134 = arith.muli %107, %67 : vector<4xi32>
      %135 = arith.addi %134, %133 : vector<4xi32>
      %136 = arith.muli %111, %73 : vector<4xi32>
      %137 = arith.addi %136, %135 : vector<4xi32>
      %138 = arith.muli %115, %79 : vector<4xi32>
      %139 = arith.addi %138, %137 : vector<4xi32>
      %140 = arith.muli %119, %85 : vector<4xi32>
      %141 = arith.addi %140, %139 : vector<4xi32>
      %142 = arith.muli %123, %91 : vector<4xi32>
      %143 = arith.addi %142, %141 : vector<4xi32>
      %144 = arith.muli %127, %97 : vector<4xi32>
      %145 = arith.addi %144, %143 : vector<4xi32>
      scf.yield %129, %145 : vector<4xi32>, vector<4xi32>
    }
    %4 = arith.index_castui %thread_id_x : index to i32
    %5 = arith.muli %4, %c2_i32 overflow<nsw> : i32
    %6 = arith.index_castui %thread_id_y : index to i32
    %7 = arith.muli %6, %c4_i32 overflow<nsw> : i32
    %8 = arith.addi %5, %7 : i32
    %9 = arith.addi %8, %c1_i32 : i32
    %10 = arith.index_castui %9 : i32 to index
    memref.store %3#1, %2[%10] : memref<?xvector<4xi32>, #spirv.storage_class<StorageBuffer>>
    %11 = arith.index_castui %8 : i32 to index
    memref.store %3#0, %2[%11] : memref<?xvector<4xi32>, #spirv.storage_class<StorageBuffer>>
    return
  }
  iree_codegen.dispatch_config @mm_dispatch_0_matmul_16x16x128_i8xi8xi32 workgroup_size = [2, 16, 1] {
  ^bb0(%arg0: !hal.device):
    %c1 = arith.constant 1 : index
    %c1_0 = arith.constant 1 : index
    %c1_1 = arith.constant 1 : index
    iree_codegen.yield %c1, %c1_0, %c1_1 : index, index, index
  }
}

// ----- IR Dump After ConvertToSPIRVPass: iree-convert-to-spirv{index-bits=32}
module attributes {hal.executable.target = #hal.executable.target<"vulkan-spirv", "vulkan-spirv-fb", {iree_codegen.target_info = #iree_gpu.target<arch = "vp_android_baseline_2022", features = "spirv:v1.3,cap:Shader", wgp = <compute = fp32|int32, storage = b32, subgroup = none, subgroup_size_choices = [64], max_workgroup_sizes = [128, 128, 64], max_thread_count_per_workgroup = 128, max_workgroup_memory_bytes = 16384, max_workgroup_counts = [65535, 65535, 65535]>>}>, spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader], []>, #spirv.resource_limits<subgroup_size = 64, min_subgroup_size = 64, max_subgroup_size = 64, cooperative_matrix_properties_khr = []>>} {
  spirv.module Logical GLSL450 {
    spirv.GlobalVariable @__builtin__LocalInvocationId__ built_in("LocalInvocationId") : !spirv.ptr<vector<3xi32>, Input>
    spirv.GlobalVariable @__resource_var_0_0_ bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xi32>, stride=8> [0])>, StorageBuffer>
    spirv.GlobalVariable @__resource_var_0_1_ bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xi32>, stride=8> [0])>, StorageBuffer>
    spirv.GlobalVariable @__resource_var_0_2_ bind(0, 2) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<4xi32>, stride=16> [0])>, StorageBuffer>
    spirv.func @mm_dispatch_0_matmul_16x16x128_i8xi8xi32() "None" attributes {gpu.known_block_size = array<i32: 2, 16, 1>, hal.executable.target = #hal.executable.target<"vulkan-spirv", "vulkan-spirv-fb", {iree_codegen.target_info = #iree_gpu.target<arch = "vp_android_baseline_2022", features = "spirv:v1.3,cap:Shader", wgp = <compute = fp32|int32, storage = b32, subgroup = none, subgroup_size_choices = [64], max_workgroup_sizes = [128, 128, 64], max_thread_count_per_workgroup = 128, max_workgroup_memory_bytes = 16384, max_workgroup_counts = [65535, 65535, 65535]>>}>, spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [2, 16, 1]>} {
      %cst_vec_4xi32 = spirv.Constant dense<[0, 8, 16, 24]> : vector<4xi32>
      %cst_vec_4xi32_0 = spirv.Constant dense<[255, 65280, 16711680, -16777216]> : vector<4xi32>
      %cst2_i32 = spirv.Constant 2 : i32
      %cst1_i32 = spirv.Constant 1 : i32
      %cst14_i32 = spirv.Constant 14 : i32
      %cst12_i32 = spirv.Constant 12 : i32
      %cst10_i32 = spirv.Constant 10 : i32
      %cst6_i32 = spirv.Constant 6 : i32
      %cst4_i32 = spirv.Constant 4 : i32
      %cst16_i32 = spirv.Constant 16 : i32
      %cst8_i32 = spirv.Constant 8 : i32
      %cst128_i32 = spirv.Constant 128 : i32
      %cst0_i32 = spirv.Constant 0 : i32
      %cst64_i32 = spirv.Constant 64 : i32
      %cst_vec_4xi32_1 = spirv.Constant dense<0> : vector<4xi32>
      %cst0_i32_2 = spirv.Constant 0 : i32
      %cst256_i32 = spirv.Constant 256 : i32
      %__resource_var_0_0__addr = spirv.mlir.addressof @__resource_var_0_0_ : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xi32>, stride=8> [0])>, StorageBuffer>
      %__resource_var_0_1__addr = spirv.mlir.addressof @__resource_var_0_1_ : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xi32>, stride=8> [0])>, StorageBuffer>
      %__resource_var_0_2__addr = spirv.mlir.addressof @__resource_var_0_2_ : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<4xi32>, stride=16> [0])>, StorageBuffer>
      %__builtin__LocalInvocationId___addr = spirv.mlir.addressof @__builtin__LocalInvocationId__ : !spirv.ptr<vector<3xi32>, Input>
      %0 = spirv.Load "Input" %__builtin__LocalInvocationId___addr : vector<3xi32>
      %1 = spirv.CompositeExtract %0[1 : i32] : vector<3xi32>
      %__builtin__LocalInvocationId___addr_3 = spirv.mlir.addressof @__builtin__LocalInvocationId__ : !spirv.ptr<vector<3xi32>, Input>
      %2 = spirv.Load "Input" %__builtin__LocalInvocationId___addr_3 : vector<3xi32>
      %3 = spirv.CompositeExtract %2[0 : i32] : vector<3xi32>
      %4 = spirv.Variable : !spirv.ptr<vector<4xi32>, Function>
      %5 = spirv.Variable : !spirv.ptr<vector<4xi32>, Function>
      spirv.mlir.loop {
        spirv.Branch ^bb1(%cst0_i32, %cst_vec_4xi32_1, %cst_vec_4xi32_1 : i32, vector<4xi32>, vector<4xi32>)
      ^bb1(%14: i32, %15: vector<4xi32>, %16: vector<4xi32>):  // 2 preds: ^bb0, ^bb2
        %17 = spirv.SLessThan %14, %cst128_i32 : i32
        spirv.BranchConditional %17, ^bb2, ^bb3
      ^bb2:  // pred: ^bb1
        %18 = spirv.IMul %1, %cst16_i32 : i32
        %19 = spirv.UDiv %14, %cst8_i32 : i32
        %20 = spirv.IAdd %18, %19 : i32
        %cst0_i32_10 = spirv.Constant 0 : i32
        %cst0_i32_11 = spirv.Constant 0 : i32
        %cst1_i32_12 = spirv.Constant 1 : i32
        %21 = spirv.AccessChain %__resource_var_0_0__addr[%cst0_i32_10, %20] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xi32>, stride=8> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<vector<2xi32>, StorageBuffer>
        %22 = spirv.Load "StorageBuffer" %21 : vector<2xi32>
        %23 = spirv.IMul %14, %cst2_i32 : i32
        %24 = spirv.IAdd %23, %3 : i32
        %cst0_i32_13 = spirv.Constant 0 : i32
        %cst0_i32_14 = spirv.Constant 0 : i32
        %cst1_i32_15 = spirv.Constant 1 : i32
        %25 = spirv.AccessChain %__resource_var_0_1__addr[%cst0_i32_13, %24] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xi32>, stride=8> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<vector<2xi32>, StorageBuffer>
        %26 = spirv.Load "StorageBuffer" %25 : vector<2xi32>
        %27 = spirv.IAdd %24, %cst2_i32 : i32
        %cst0_i32_16 = spirv.Constant 0 : i32
        %cst0_i32_17 = spirv.Constant 0 : i32
        %cst1_i32_18 = spirv.Constant 1 : i32
        %28 = spirv.AccessChain %__resource_var_0_1__addr[%cst0_i32_16, %27] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xi32>, stride=8> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<vector<2xi32>, StorageBuffer>
        %29 = spirv.Load "StorageBuffer" %28 : vector<2xi32>
        %30 = spirv.IAdd %24, %cst4_i32 : i32
        %cst0_i32_19 = spirv.Constant 0 : i32
        %cst0_i32_20 = spirv.Constant 0 : i32
        %cst1_i32_21 = spirv.Constant 1 : i32
        %31 = spirv.AccessChain %__resource_var_0_1__addr[%cst0_i32_19, %30] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xi32>, stride=8> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<vector<2xi32>, StorageBuffer>
        %32 = spirv.Load "StorageBuffer" %31 : vector<2xi32>
        %33 = spirv.IAdd %24, %cst6_i32 : i32
        %cst0_i32_22 = spirv.Constant 0 : i32
        %cst0_i32_23 = spirv.Constant 0 : i32
        %cst1_i32_24 = spirv.Constant 1 : i32
        %34 = spirv.AccessChain %__resource_var_0_1__addr[%cst0_i32_22, %33] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xi32>, stride=8> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<vector<2xi32>, StorageBuffer>
        %35 = spirv.Load "StorageBuffer" %34 : vector<2xi32>
        %36 = spirv.IAdd %24, %cst8_i32 : i32
        %cst0_i32_25 = spirv.Constant 0 : i32
        %cst0_i32_26 = spirv.Constant 0 : i32
        %cst1_i32_27 = spirv.Constant 1 : i32
        %37 = spirv.AccessChain %__resource_var_0_1__addr[%cst0_i32_25, %36] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xi32>, stride=8> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<vector<2xi32>, StorageBuffer>
        %38 = spirv.Load "StorageBuffer" %37 : vector<2xi32>
        %39 = spirv.IAdd %24, %cst10_i32 : i32
        %cst0_i32_28 = spirv.Constant 0 : i32
        %cst0_i32_29 = spirv.Constant 0 : i32
        %cst1_i32_30 = spirv.Constant 1 : i32
        %40 = spirv.AccessChain %__resource_var_0_1__addr[%cst0_i32_28, %39] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xi32>, stride=8> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<vector<2xi32>, StorageBuffer>
        %41 = spirv.Load "StorageBuffer" %40 : vector<2xi32>
        %42 = spirv.IAdd %24, %cst12_i32 : i32
        %cst0_i32_31 = spirv.Constant 0 : i32
        %cst0_i32_32 = spirv.Constant 0 : i32
        %cst1_i32_33 = spirv.Constant 1 : i32
        %43 = spirv.AccessChain %__resource_var_0_1__addr[%cst0_i32_31, %42] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xi32>, stride=8> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<vector<2xi32>, StorageBuffer>
        %44 = spirv.Load "StorageBuffer" %43 : vector<2xi32>
        %45 = spirv.IAdd %24, %cst14_i32 : i32
        %cst0_i32_34 = spirv.Constant 0 : i32
        %cst0_i32_35 = spirv.Constant 0 : i32
        %cst1_i32_36 = spirv.Constant 1 : i32
        %46 = spirv.AccessChain %__resource_var_0_1__addr[%cst0_i32_34, %45] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xi32>, stride=8> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<vector<2xi32>, StorageBuffer>
        %47 = spirv.Load "StorageBuffer" %46 : vector<2xi32>
        %48 = spirv.CompositeExtract %22[0 : i32] : vector<2xi32>
        %49 = spirv.CompositeConstruct %48, %48, %48, %48 : (i32, i32, i32, i32) -> vector<4xi32>
        %50 = spirv.BitwiseAnd %49, %cst_vec_4xi32_0 : vector<4xi32>
        %51 = spirv.ShiftRightLogical %50, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %52 = spirv.CompositeExtract %22[1 : i32] : vector<2xi32>
        %53 = spirv.CompositeConstruct %52, %52, %52, %52 : (i32, i32, i32, i32) -> vector<4xi32>
        %54 = spirv.BitwiseAnd %53, %cst_vec_4xi32_0 : vector<4xi32>
        %55 = spirv.ShiftRightLogical %54, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %56 = spirv.CompositeExtract %26[0 : i32] : vector<2xi32>
        %57 = spirv.CompositeConstruct %56, %56, %56, %56 : (i32, i32, i32, i32) -> vector<4xi32>
        %58 = spirv.BitwiseAnd %57, %cst_vec_4xi32_0 : vector<4xi32>
        %59 = spirv.ShiftRightLogical %58, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %60 = spirv.CompositeExtract %26[1 : i32] : vector<2xi32>
        %61 = spirv.CompositeConstruct %60, %60, %60, %60 : (i32, i32, i32, i32) -> vector<4xi32>
        %62 = spirv.BitwiseAnd %61, %cst_vec_4xi32_0 : vector<4xi32>
        %63 = spirv.ShiftRightLogical %62, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %64 = spirv.CompositeExtract %29[0 : i32] : vector<2xi32>
        %65 = spirv.CompositeConstruct %64, %64, %64, %64 : (i32, i32, i32, i32) -> vector<4xi32>
        %66 = spirv.BitwiseAnd %65, %cst_vec_4xi32_0 : vector<4xi32>
        %67 = spirv.ShiftRightLogical %66, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %68 = spirv.CompositeExtract %29[1 : i32] : vector<2xi32>
        %69 = spirv.CompositeConstruct %68, %68, %68, %68 : (i32, i32, i32, i32) -> vector<4xi32>
        %70 = spirv.BitwiseAnd %69, %cst_vec_4xi32_0 : vector<4xi32>
        %71 = spirv.ShiftRightLogical %70, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %72 = spirv.CompositeExtract %32[0 : i32] : vector<2xi32>
        %73 = spirv.CompositeConstruct %72, %72, %72, %72 : (i32, i32, i32, i32) -> vector<4xi32>
        %74 = spirv.BitwiseAnd %73, %cst_vec_4xi32_0 : vector<4xi32>
        %75 = spirv.ShiftRightLogical %74, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %76 = spirv.CompositeExtract %32[1 : i32] : vector<2xi32>
        %77 = spirv.CompositeConstruct %76, %76, %76, %76 : (i32, i32, i32, i32) -> vector<4xi32>
        %78 = spirv.BitwiseAnd %77, %cst_vec_4xi32_0 : vector<4xi32>
        %79 = spirv.ShiftRightLogical %78, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %80 = spirv.CompositeExtract %35[0 : i32] : vector<2xi32>
        %81 = spirv.CompositeConstruct %80, %80, %80, %80 : (i32, i32, i32, i32) -> vector<4xi32>
        %82 = spirv.BitwiseAnd %81, %cst_vec_4xi32_0 : vector<4xi32>
        %83 = spirv.ShiftRightLogical %82, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %84 = spirv.CompositeExtract %35[1 : i32] : vector<2xi32>
        %85 = spirv.CompositeConstruct %84, %84, %84, %84 : (i32, i32, i32, i32) -> vector<4xi32>
        %86 = spirv.BitwiseAnd %85, %cst_vec_4xi32_0 : vector<4xi32>
        %87 = spirv.ShiftRightLogical %86, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %88 = spirv.CompositeExtract %38[0 : i32] : vector<2xi32>
        %89 = spirv.CompositeConstruct %88, %88, %88, %88 : (i32, i32, i32, i32) -> vector<4xi32>
        %90 = spirv.BitwiseAnd %89, %cst_vec_4xi32_0 : vector<4xi32>
        %91 = spirv.ShiftRightLogical %90, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %92 = spirv.CompositeExtract %38[1 : i32] : vector<2xi32>
        %93 = spirv.CompositeConstruct %92, %92, %92, %92 : (i32, i32, i32, i32) -> vector<4xi32>
        %94 = spirv.BitwiseAnd %93, %cst_vec_4xi32_0 : vector<4xi32>
        %95 = spirv.ShiftRightLogical %94, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %96 = spirv.CompositeExtract %41[0 : i32] : vector<2xi32>
        %97 = spirv.CompositeConstruct %96, %96, %96, %96 : (i32, i32, i32, i32) -> vector<4xi32>
        %98 = spirv.BitwiseAnd %97, %cst_vec_4xi32_0 : vector<4xi32>
        %99 = spirv.ShiftRightLogical %98, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %100 = spirv.CompositeExtract %41[1 : i32] : vector<2xi32>
        %101 = spirv.CompositeConstruct %100, %100, %100, %100 : (i32, i32, i32, i32) -> vector<4xi32>
        %102 = spirv.BitwiseAnd %101, %cst_vec_4xi32_0 : vector<4xi32>
        %103 = spirv.ShiftRightLogical %102, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %104 = spirv.CompositeExtract %44[0 : i32] : vector<2xi32>
        %105 = spirv.CompositeConstruct %104, %104, %104, %104 : (i32, i32, i32, i32) -> vector<4xi32>
        %106 = spirv.BitwiseAnd %105, %cst_vec_4xi32_0 : vector<4xi32>
        %107 = spirv.ShiftRightLogical %106, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %108 = spirv.CompositeExtract %44[1 : i32] : vector<2xi32>
        %109 = spirv.CompositeConstruct %108, %108, %108, %108 : (i32, i32, i32, i32) -> vector<4xi32>
        %110 = spirv.BitwiseAnd %109, %cst_vec_4xi32_0 : vector<4xi32>
        %111 = spirv.ShiftRightLogical %110, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %112 = spirv.CompositeExtract %47[0 : i32] : vector<2xi32>
        %113 = spirv.CompositeConstruct %112, %112, %112, %112 : (i32, i32, i32, i32) -> vector<4xi32>
        %114 = spirv.BitwiseAnd %113, %cst_vec_4xi32_0 : vector<4xi32>
        %115 = spirv.ShiftRightLogical %114, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %116 = spirv.CompositeExtract %47[1 : i32] : vector<2xi32>
        %117 = spirv.CompositeConstruct %116, %116, %116, %116 : (i32, i32, i32, i32) -> vector<4xi32>
        %118 = spirv.BitwiseAnd %117, %cst_vec_4xi32_0 : vector<4xi32>
        %119 = spirv.ShiftRightLogical %118, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>
        %120 = spirv.CompositeExtract %51[0 : i32] : vector<4xi32>
        %121 = spirv.CompositeConstruct %120, %120, %120, %120 : (i32, i32, i32, i32) -> vector<4xi32>
        %122 = spirv.IMul %121, %59 : vector<4xi32>
        %123 = spirv.IAdd %122, %15 : vector<4xi32>
        %124 = spirv.CompositeExtract %51[1 : i32] : vector<4xi32>
        %125 = spirv.CompositeConstruct %124, %124, %124, %124 : (i32, i32, i32, i32) -> vector<4xi32>
        %126 = spirv.IMul %125, %67 : vector<4xi32>
        %127 = spirv.IAdd %126, %123 : vector<4xi32>
        %128 = spirv.CompositeExtract %51[2 : i32] : vector<4xi32>
        %129 = spirv.CompositeConstruct %128, %128, %128, %128 : (i32, i32, i32, i32) -> vector<4xi32>
        %130 = spirv.IMul %129, %75 : vector<4xi32>
        %131 = spirv.IAdd %130, %127 : vector<4xi32>
        %132 = spirv.CompositeExtract %51[3 : i32] : vector<4xi32>
        %133 = spirv.CompositeConstruct %132, %132, %132, %132 : (i32, i32, i32, i32) -> vector<4xi32>
        %134 = spirv.IMul %133, %83 : vector<4xi32>
        %135 = spirv.IAdd %134, %131 : vector<4xi32>
        %136 = spirv.CompositeExtract %55[0 : i32] : vector<4xi32>
        %137 = spirv.CompositeConstruct %136, %136, %136, %136 : (i32, i32, i32, i32) -> vector<4xi32>
        %138 = spirv.IMul %137, %91 : vector<4xi32>
        %139 = spirv.IAdd %138, %135 : vector<4xi32>
        %140 = spirv.CompositeExtract %55[1 : i32] : vector<4xi32>
        %141 = spirv.CompositeConstruct %140, %140, %140, %140 : (i32, i32, i32, i32) -> vector<4xi32>
        %142 = spirv.IMul %141, %99 : vector<4xi32>
        %143 = spirv.IAdd %142, %139 : vector<4xi32>
        %144 = spirv.CompositeExtract %55[2 : i32] : vector<4xi32>
        %145 = spirv.CompositeConstruct %144, %144, %144, %144 : (i32, i32, i32, i32) -> vector<4xi32>
        %146 = spirv.IMul %145, %107 : vector<4xi32>
        %147 = spirv.IAdd %146, %143 : vector<4xi32>
        %148 = spirv.CompositeExtract %55[3 : i32] : vector<4xi32>
        %149 = spirv.CompositeConstruct %148, %148, %148, %148 : (i32, i32, i32, i32) -> vector<4xi32>
        %150 = spirv.IMul %149, %115 : vector<4xi32>
        %151 = spirv.IAdd %150, %147 : vector<4xi32>
        %152 = spirv.IMul %121, %63 : vector<4xi32>
        %153 = spirv.IAdd %152, %16 : vector<4xi32>
        %154 = spirv.IMul %125, %71 : vector<4xi32>
        %155 = spirv.IAdd %154, %153 : vector<4xi32>
        %156 = spirv.IMul %129, %79 : vector<4xi32>
        %157 = spirv.IAdd %156, %155 : vector<4xi32>
        %158 = spirv.IMul %133, %87 : vector<4xi32>
        %159 = spirv.IAdd %158, %157 : vector<4xi32>
        %160 = spirv.IMul %137, %95 : vector<4xi32>
        %161 = spirv.IAdd %160, %159 : vector<4xi32>
        %162 = spirv.IMul %141, %103 : vector<4xi32>
        %163 = spirv.IAdd %162, %161 : vector<4xi32>
        %164 = spirv.IMul %145, %111 : vector<4xi32>
        %165 = spirv.IAdd %164, %163 : vector<4xi32>
        %166 = spirv.IMul %149, %119 : vector<4xi32>
        %167 = spirv.IAdd %166, %165 : vector<4xi32>
        spirv.Store "Function" %4, %151 : vector<4xi32>
        spirv.Store "Function" %5, %167 : vector<4xi32>
        %168 = spirv.IAdd %14, %cst8_i32 : i32
        spirv.Branch ^bb1(%168, %151, %167 : i32, vector<4xi32>, vector<4xi32>)
      ^bb3:  // pred: ^bb1
        spirv.mlir.merge
      }
      %6 = spirv.Load "Function" %5 : vector<4xi32>
      %7 = spirv.Load "Function" %4 : vector<4xi32>
      %8 = spirv.IMul %3, %cst2_i32 : i32
      %9 = spirv.IMul %1, %cst4_i32 : i32
      %10 = spirv.IAdd %8, %9 : i32
      %11 = spirv.IAdd %10, %cst1_i32 : i32
      %cst0_i32_4 = spirv.Constant 0 : i32
      %cst0_i32_5 = spirv.Constant 0 : i32
      %cst1_i32_6 = spirv.Constant 1 : i32
      %12 = spirv.AccessChain %__resource_var_0_2__addr[%cst0_i32_4, %11] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<4xi32>, stride=16> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<vector<4xi32>, StorageBuffer>
      spirv.Store "StorageBuffer" %12, %6 : vector<4xi32>
      %cst0_i32_7 = spirv.Constant 0 : i32
      %cst0_i32_8 = spirv.Constant 0 : i32
      %cst1_i32_9 = spirv.Constant 1 : i32
      %13 = spirv.AccessChain %__resource_var_0_2__addr[%cst0_i32_7, %10] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<4xi32>, stride=16> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<vector<4xi32>, StorageBuffer>
      spirv.Store "StorageBuffer" %13, %7 : vector<4xi32>
      spirv.Return
    }
  }
  iree_codegen.dispatch_config @mm_dispatch_0_matmul_16x16x128_i8xi8xi32 workgroup_size = [2, 16, 1] {
  ^bb0(%arg0: !hal.device):
    %c1 = arith.constant 1 : index
    iree_codegen.yield %c1, %c1, %c1 : index, index, index
  }
}
