func.func @rowexpandmul_fillpad(%gated: tensor<1x1xf32>, %scale: tensor<1x1xf32>) -> tensor<1x1xf32> {
  %e = tensor.empty() : tensor<1x1xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, 0)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%gated, %scale : tensor<1x1xf32>, tensor<1x1xf32>) outs(%e : tensor<1x1xf32>) {
  ^bb0(%g: f32, %s: f32, %o: f32):
    %gt = arith.truncf %g : f32 to bf16
    %st = arith.truncf %s : f32 to bf16
    %pt = arith.mulf %gt, %st : bf16
    %p = arith.extf %pt : bf16 to f32
    linalg.yield %p : f32
  } -> tensor<1x1xf32>
  return %out : tensor<1x1xf32>
}
