func.func @exp_f32(%x: tensor<9xf32>) -> tensor<9xf32> {
  %e = tensor.empty() : tensor<9xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<9xf32>) outs(%e : tensor<9xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<9xf32>
  return %y : tensor<9xf32>
}
