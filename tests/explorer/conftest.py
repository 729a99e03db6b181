"""The explorer tests use tiny models: one intra-op thread is as fast, and much faster on a busy machine."""

from __future__ import annotations

import torch

torch.set_num_threads(1)
