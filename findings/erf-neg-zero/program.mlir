func.func @main(%x: tensor<1xf32>) -> (tensor<1xf32>) {
  %y_empty = tensor.empty() : tensor<1xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x : tensor<1xf32>) outs(%y_empty : tensor<1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.erf %a : f32
    linalg.yield %r : f32
  } -> tensor<1xf32>
  return %y : tensor<1xf32>
}
