"""torch's bf16 matmul on a CPU with AMX: an inf at the start of one row of A makes the row above
it NaN when K % 32 != 0 (uxlfoundation/oneDNN#5717). Needs only torch. Exit 1: the bug shows;
0: no NaN; 2: no verdict here (this CPU or torch does not take oneDNN's AMX kernel)."""
import sys
import torch

a = torch.full((64, 100), 0.5, dtype=torch.bfloat16)   # K = 100: a K tail of 4 after 3 x 32
a[1, 0] = float("inf")                                  # row 1 of C is inf; no other row sees it
c = torch.matmul(a, torch.ones(100, 256, dtype=torch.bfloat16))
nan_rows = torch.isnan(c.float()).any(dim=1).nonzero().flatten().tolist()
amx = torch.cpu._is_amx_tile_supported() and torch.backends.mkldnn.is_available()
onednn = torch.__config__.show().split("MKL-DNN ")[-1].splitlines()[0]
print(f"torch {torch.__version__}, oneDNN {onednn}, AMX {amx}: rows with NaN {nan_rows} (expected none)")
sys.exit(1 if nan_rows else (0 if amx else 2))
