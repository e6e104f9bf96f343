"""A minimal IMPORT STAND-IN for PyTorch, for the interop tests only: not torch.

dynamo.nixl_connect 1.6.1 imports torch at the top but, for the host memory these tests use, touches it
only in isinstance(data, torch.Tensor) checks (Descriptor.__init__, register_with_connector). Where torch is
not installed, interop/dynamo_peer.py appends this folder to sys.path so the real module imports; the tests
pass numpy arrays and bytes, never tensors. A real torch, when installed, is found first and used instead.
"""


class Tensor:
    """Nothing is ever an instance of this: every isinstance(x, torch.Tensor) check is False."""
