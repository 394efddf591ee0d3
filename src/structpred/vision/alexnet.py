"""AlexNet up to conv4 (Krizhevsky et al. 2012, torchvision's single-tower variant) as a box featuriser.

Casimir §7.2 describes each candidate box by AlexNet's conv4 map, ``256 x 3 x 3 = 2304``
numbers.  The layers are torchvision's ``alexnet().features[:10]`` (conv1 64@11x11 stride 4,
ReLU, max-pool 3/2, conv2 192@5x5, ReLU, max-pool 3/2, conv3 384@3x3, ReLU, conv4 256@3x3,
ReLU) under the same parameter names, so torchvision's ImageNet weight file loads as is
(:func:`load_weights`); no torchvision is needed.  A crop resized to ``64 x 64`` (the paper's size) gives a
``3 x 3`` conv4 map (64 -> 15 -> 7 -> 7 -> 3 -> 3 -> 3).  Inputs are RGB in [0, 1],
normalised by ImageNet's mean and std, as torchvision's weights expect.
"""

from __future__ import annotations

import hashlib

import numpy as np
from PIL import Image

from structpred.errors import DataError

#: side of the square crop fed to the network: a 3 x 3 conv4 map
CROP = 64
#: the conv4 feature size per box
N_FEATURES = 256 * 3 * 3
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _torch():
    try:
        import torch
    except ImportError:
        raise DataError("box features need PyTorch: pip install 'structpred[vision]'") from None
    return torch


def resolve_device(device: str = "auto") -> str:
    """``"auto"``: ``"cuda"`` when a GPU is visible to torch, else ``"cpu"``; else ``device`` as given
    (``"cuda"`` without a GPU is one clear error)."""
    torch = _torch()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise DataError(f"device {device!r} asked for, but torch sees no GPU (use device: auto or cpu)")
    if device != "cpu" and not device.startswith("cuda"):
        raise DataError(f"unknown device {device!r}: use auto, cpu or cuda")
    return device


def conv4_net(seed: int | None = 0):
    """The conv1..conv4 layers (torchvision's ``features[:10]``), randomly initialised from ``seed``
    (PyTorch's default initialisation) until :func:`load_weights` replaces them."""
    torch = _torch()
    nn = torch.nn
    if seed is not None:
        torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2), nn.ReLU(inplace=True),
        nn.MaxPool2d(kernel_size=3, stride=2),
        nn.Conv2d(64, 192, kernel_size=5, padding=2), nn.ReLU(inplace=True),
        nn.MaxPool2d(kernel_size=3, stride=2),
        nn.Conv2d(192, 384, kernel_size=3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
    ).eval()


def load_weights(net, path) -> None:
    """Load torchvision's AlexNet weight file (``alexnet-owt-7be5be79.pth``): its ``features.0`` to
    ``features.8`` tensors; the classifier's are ignored."""
    torch = _torch()
    state = torch.load(path, map_location="cpu", weights_only=True)
    mine = {k.removeprefix("features."): v for k, v in state.items()
            if k.startswith("features.") and int(k.split(".")[1]) < 10}
    missing = set(net.state_dict()) - set(mine)
    if missing:
        raise DataError(f"{path}: not an AlexNet weight file (missing {', '.join(sorted(missing))})")
    net.load_state_dict(mine)


def crops(image: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Each box of ``image`` (``(H, W, 3)`` uint8 RGB) cut out and resized to ``CROP x CROP``
    (bilinear), as float32 ``(m, 3, CROP, CROP)`` normalised with ImageNet's mean and std."""
    pil = Image.fromarray(image)
    out = np.empty((len(boxes), 3, CROP, CROP), dtype=np.float32)
    for j, (x0, y0, x1, y1) in enumerate(np.asarray(boxes, dtype=np.int64)):
        crop = pil.crop((int(x0), int(y0), int(x1) + 1, int(y1) + 1)).resize((CROP, CROP), Image.BILINEAR)
        out[j] = np.asarray(crop, dtype=np.float32).transpose(2, 0, 1) / 255.0
    mean = np.asarray(IMAGENET_MEAN, dtype=np.float32)[:, None, None]
    std = np.asarray(IMAGENET_STD, dtype=np.float32)[:, None, None]
    return (out - mean) / std


def box_features(net, image: np.ndarray, boxes: np.ndarray, *, device: str = "cpu",
                 batch_size: int = 256) -> np.ndarray:
    """conv4 features (float32 ``(m, 2304)``) of each box of ``image``, in batches on ``device``."""
    return crop_features(net, crops(image, boxes), device=device, batch_size=batch_size)


def crop_features(net, x: np.ndarray, *, device: str = "cpu", batch_size: int = 256) -> np.ndarray:
    """conv4 features (float32 ``(m, 2304)``) of the network inputs ``x`` (:func:`crops`), in
    batches of ``batch_size`` on ``device``."""
    torch = _torch()
    net = net.to(device)
    out = np.empty((len(x), N_FEATURES), dtype=np.float32)
    with torch.inference_mode():
        for a in range(0, len(x), batch_size):
            batch = torch.from_numpy(x[a:a + batch_size]).to(device)
            out[a:a + batch_size] = net(batch).reshape(len(batch), -1).float().cpu().numpy()
    return out


def weights_digest(net) -> str:
    """sha256 of the network's parameters (the provenance of cached features)."""
    h = hashlib.sha256()
    for name, tensor in net.state_dict().items():
        h.update(name.encode())
        h.update(tensor.detach().cpu().numpy().tobytes())
    return h.hexdigest()
