"""Python workloads the tests sweep (also run through `fourfold run --python` by the CLI test)."""
import torch

import fourfold


class ScaledAdd(fourfold.Workload):
    """y = 2 x + 1 over n elements: a right variant and a wrong one"""

    name = "test_scaled_add"
    params = {"n": fourfold.param(256, min=1, max=1 << 20, help="elements"),
              "scale": fourfold.param(2, min=1, max=8, help="the factor")}
    dtypes = ("fp32", "bf16")
    shape = ("n",)

    def inputs(self, case, seed):
        g = torch.Generator().manual_seed(seed)
        return {"x": torch.randn(case.n, generator=g).to(case.torch_dtype)}

    def reference(self, case, x):
        """scale * x + 1 in float64"""
        return case.scale * x + 1

    def cost(self, case):
        b = case.n * torch.empty((), dtype=case.torch_dtype).element_size()
        return {"bytes_read": b, "bytes_written": b, "flops": 2 * case.n}

    @fourfold.variant(help="mul then add")
    def stock(self, case, x):
        return x * case.scale + 1

    @fourfold.variant(help="one fused op")
    def fused(self, case, x):
        return torch.add(torch.ones_like(x), x, alpha=case.scale)


class WrongAdd(ScaledAdd):
    """as ScaledAdd, with a variant that is off by 1 %"""

    name = "test_wrong_add"

    @fourfold.variant(help="off by one percent")
    def wrong(self, case, x):
        return (x * case.scale + 1) * 1.01
