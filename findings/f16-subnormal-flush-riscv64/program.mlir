func.func @rowexpandmul_fillpad(%gated: tensor<1x1xf32>, %scale: tensor<1x1xf32>, %valid_row: tensor<1xi32>, %valid_col: tensor<1xi32>, %pad: tensor<1xf32>) -> tensor<1x1xf32> {
  %e = tensor.empty() : tensor<1x1xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, 0)>, affine_map<(i, j) -> (0)>, affine_map<(i, j) -> (0)>, affine_map<(i, j) -> (0)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%gated, %scale, %valid_row, %valid_col, %pad : tensor<1x1xf32>, tensor<1x1xf32>, tensor<1xi32>, tensor<1xi32>, tensor<1xf32>) outs(%e : tensor<1x1xf32>) {
  ^bb0(%g: f32, %s: f32, %vr: i32, %vc: i32, %pv: f32, %o: f32):
    %z = arith.constant -0.0 : f32
    %gt = arith.truncf %g : f32 to f16
    %st = arith.truncf %s : f32 to f16
    %pt = arith.mulf %gt, %st : f16
    %p = arith.extf %pt : f16 to f32
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %inr = arith.cmpi slt, %ii, %vr : i32
    %inc = arith.cmpi slt, %jj, %vc : i32
    %in = arith.andi %inr, %inc : i1
    %y = arith.select %in, %p, %pv : f32
    linalg.yield %y : f32
  } -> tensor<1x1xf32>
  return %out : tensor<1x1xf32>
}
