func.func @to_f16(%x: tensor<6xf32>) -> tensor<6xf32> {
  %e = tensor.empty() : tensor<6xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<6xf32>) outs(%e : tensor<6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %h = arith.truncf %a : f32 to f16
    %r = arith.extf %h : f16 to f32
    linalg.yield %r : f32
  } -> tensor<6xf32>
  return %y : tensor<6xf32>
}
