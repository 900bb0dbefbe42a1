"""tasks/core/checkpoints.py: atomic, byte-deterministic checkpoints, refused under another config."""

from __future__ import annotations

import pytest
import torch

from tasks.core.checkpoints import CheckpointMismatchError, load_checkpoint, save_checkpoint


def test_equal_checkpoints_are_equal_bytes_wherever_they_are_written(tmp_path):
    """DVC and the k-best metadata hash checkpoints: the temporary file name must not leak in."""
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    save_checkpoint(tmp_path / "a" / "best.pt", model, {"size": 3}, epoch=1)
    save_checkpoint(tmp_path / "b" / "best.pt", model, {"size": 3}, epoch=1)
    a, b = ((tmp_path / d / "best.pt").read_bytes() for d in "ab")
    assert a == b
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_loading_under_another_configuration_names_the_difference(tmp_path):
    save_checkpoint(tmp_path / "m.pt", torch.nn.Linear(3, 2), {"size": 3})
    assert load_checkpoint(tmp_path / "m.pt", {"size": 3})["config"] == {"size": 3}
    with pytest.raises(CheckpointMismatchError, match="size"):
        load_checkpoint(tmp_path / "m.pt", {"size": 4})


def test_a_checkpoint_that_would_run_code_is_refused(tmp_path):
    """A planted best.pt whose pickle calls os.system is refused before anything runs."""
    import os

    import torch

    from tasks.core.checkpoints import load_checkpoint
    from tasks.core.errors import CorefreproError

    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "best.pt"
    torch.save({"config": {}, "state_dict": {}, "payload": Exploit()}, path)
    with pytest.raises(CorefreproError, match=r"best\.pt: refused: not a plain checkpoint"):
        load_checkpoint(path)
    assert not marker.exists()


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_a_damaged_checkpoint_is_one_line_naming_the_file(tmp_path, damage):
    """Issue #30.2: a truncated or garbage .pt raised RuntimeError/KeyError/EOFError tracebacks."""
    from tasks.core.errors import CorefreproError

    path = tmp_path / "best.pt"
    save_checkpoint(path, torch.nn.Linear(30, 20), {"size": 3})
    whole = path.read_bytes()
    path.write_bytes({"truncated": whole[: len(whole) // 2], "garbage": b"not a zip" * 40,
                      "empty": b""}[damage])  # fmt: skip
    with pytest.raises(CorefreproError) as err:
        load_checkpoint(path)
    message = str(err.value)
    assert message.startswith(f"{path}: unreadable checkpoint (") and "\n" not in message
    assert message.endswith("Remove it and rerun the stage that writes it.")
