"""Small-host detection from fake /proc and cgroup trees, and the limits chosen for each kind of host."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.host import (
    GIB,
    MIB,
    NORMAL_LIMITS,
    SMALL_LIMITS,
    HostProfile,
    detect_host,
    host_profile,
    limits,
    limits_for,
)


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    """A fake /proc with 16 GiB of memory and an empty cgroup mount."""
    proc, cgroup = tmp_path / "proc", tmp_path / "cgroup"
    _write(proc, "meminfo", "MemTotal:       16777216 kB\nMemFree:         1000000 kB\n")
    _write(proc, "self/cgroup", "0::/\n")
    cgroup.mkdir()
    return proc, cgroup


def _detect(roots: tuple[Path, Path], cores: int = 8, cwd: str = "/home/me/transformer-explorer",
            **env: str) -> HostProfile:
    proc, cgroup = roots
    return detect_host(proc_root=proc, cgroup_root=cgroup, cores=cores, environ=env, cwd=cwd)


def test_machine_without_limits_uses_meminfo_and_affinity(roots):
    profile = _detect(roots)
    assert profile == HostProfile(cores=8, memory_bytes=16 * GIB, small=False)


def test_cgroup_v2_memory_limit_makes_a_small_host(roots):
    _write(roots[1], "memory.max", f"{800 * MIB}\n")
    profile = _detect(roots)
    assert profile.memory_bytes == 800 * MIB
    assert profile.small


def test_cgroup_v2_limit_of_the_process_own_group_is_read(roots):
    proc, cgroup = roots
    _write(proc, "self/cgroup", "0::/app/session\n")
    _write(cgroup, "app/session/memory.max", f"{512 * MIB}\n")
    _write(cgroup, "memory.max", "max\n")
    assert _detect(roots).memory_bytes == 512 * MIB


def test_cgroup_v1_unlimited_value_is_ignored(roots):
    proc, cgroup = roots
    _write(proc, "self/cgroup", "4:memory:/\n1:cpu,cpuacct:/\n")
    _write(cgroup, "memory/memory.limit_in_bytes", "9223372036854771712\n")
    assert _detect(roots).memory_bytes == 16 * GIB


def test_cgroup_v1_memory_limit_is_read(roots):
    proc, cgroup = roots
    _write(proc, "self/cgroup", "4:memory:/docker/abc\n")
    _write(cgroup, "memory/docker/abc/memory.limit_in_bytes", f"{2 * GIB}\n")
    profile = _detect(roots)
    assert profile.memory_bytes == 2 * GIB and not profile.small


def test_cpu_quota_below_one_core_is_small(roots):
    _write(roots[1], "cpu.max", "50000 100000\n")
    profile = _detect(roots)
    assert profile.cores == 1 and profile.small


def test_cpu_quota_caps_the_affinity(roots):
    _write(roots[1], "cpu.max", "250000 100000\n")
    assert _detect(roots, cores=16).cores == 3


def test_cgroup_v1_cpu_quota(roots):
    proc, cgroup = roots
    _write(proc, "self/cgroup", "2:cpu:/\n")
    _write(cgroup, "cpu/cpu.cfs_quota_us", "200000\n")
    _write(cgroup, "cpu/cpu.cfs_period_us", "100000\n")
    assert _detect(roots, cores=8).cores == 2


def test_no_quota_keeps_the_affinity(roots):
    _write(roots[1], "cpu.max", "max 100000\n")
    assert _detect(roots, cores=4).cores == 4


def test_one_core_is_small(roots):
    assert _detect(roots, cores=1).small


def test_community_cloud_counts_as_small(roots):
    """Community Cloud: about 2.7 GB and two shared cores, and the app checked out under /mount/src."""
    proc, cgroup = roots
    _write(cgroup, "memory.max", f"{2700 * MIB}\n")
    assert _detect(roots, cores=2).small  # by its size alone
    _write(cgroup, "memory.max", "max\n")
    assert not _detect(roots, cores=2).small  # the same two cores with 16 GB: an ordinary machine
    assert _detect(roots, cores=2, cwd="/mount/src/transformer-explorer").small  # by where it runs
    assert _detect(roots, cores=8, cwd="/mount/src").small
    assert not _detect(roots, cores=8, cwd="/mount/srcery/app").small
    assert not _detect(roots, cores=2, cwd="/mount/src/transformer-explorer", TE_SMALL_HOST="0").small


def test_a_two_core_laptop_with_24_gb_is_not_small(roots):
    _write(roots[0], "meminfo", f"MemTotal:       {24 * 1024 * 1024} kB\n")
    profile = _detect(roots, cores=2)
    assert profile == HostProfile(cores=2, memory_bytes=24 * GIB, small=False)
    _write(roots[1], "memory.max", f"{3 * GIB - 1}\n")  # just under 3 GB with two cores: shared cloud host
    assert _detect(roots, cores=2).small
    assert not _detect(roots, cores=3).small


def test_environment_overrides_detection(roots):
    assert _detect(roots, TE_SMALL_HOST="1").small
    _write(roots[1], "memory.max", f"{300 * MIB}\n")
    assert not _detect(roots, TE_SMALL_HOST="0").small


def test_unreadable_files_fall_back_to_an_ordinary_machine(tmp_path):
    profile = detect_host(proc_root=tmp_path / "none", cgroup_root=tmp_path / "none", cores=4, environ={},
                          cwd=tmp_path)
    assert profile.memory_bytes == 4 * GIB and not profile.small


def test_small_limits_are_lower_everywhere():
    numeric = ["max_d_model", "max_layers", "max_steps", "max_batch", "default_steps",
               "max_image_size", "max_text_chars", "memory_budget_bytes", "step_time_budget_s",
               "measure_time_budget_s", "max_checkpoint_bytes", "max_live_runs"]
    for name in numeric:
        assert getattr(SMALL_LIMITS, name) < getattr(NORMAL_LIMITS, name), name
    for chosen in (SMALL_LIMITS, NORMAL_LIMITS):
        assert chosen.default_steps <= chosen.max_steps
        # no looser than the memory budget, whose runs hold weights, gradients and two AdamW states (4 x checkpoint)
        assert chosen.max_checkpoint_bytes <= chosen.memory_budget_bytes // 4
        assert chosen.step_time_budget_s <= 0.5  # Pause acts within about one step plus a redraw
        assert chosen.max_live_runs >= 2


def test_limits_follow_the_profile_and_cap_threads_at_the_cores():
    small = limits_for(HostProfile(cores=1, memory_bytes=700 * MIB, small=True))
    assert small.max_d_model == SMALL_LIMITS.max_d_model and small.threads == 1
    normal = limits_for(HostProfile(cores=2, memory_bytes=8 * GIB, small=False))
    assert normal.max_steps == NORMAL_LIMITS.max_steps and normal.threads == 2


def test_this_machine_is_measured_once():
    assert host_profile() is host_profile()
    assert limits().threads >= 1


def test_a_container_with_community_clouds_limits_is_small_without_the_environment_switch(roots):
    """A container's own limits (cgroup v2 memory.max and cpu.max) on a big machine make a small host."""
    proc, cgroup = roots
    _write(cgroup, "memory.max", f"{2700 * MIB}\n")
    _write(cgroup, "cpu.max", "200000 100000\n")  # two cores' worth of time
    profile = detect_host(proc_root=proc, cores=16, environ={"TE_CGROUP_ROOT": str(cgroup)}, cwd="/srv/app")
    assert profile == HostProfile(cores=2, memory_bytes=2700 * MIB, small=True)
    _write(cgroup, "cpu.max", "max 100000\n")  # no quota: the 16 cores, and 2.7 GB alone is not small
    assert not detect_host(proc_root=proc, cores=16, environ={"TE_CGROUP_ROOT": str(cgroup)}, cwd="/srv/app").small


def test_cgroup_v1_limits_of_a_container_from_the_environment(roots):
    proc, cgroup = roots
    _write(proc, "self/cgroup", "4:memory:/docker/abc\n2:cpu:/docker/abc\n")
    _write(cgroup, "memory/docker/abc/memory.limit_in_bytes", f"{900 * MIB}\n")
    _write(cgroup, "cpu/docker/abc/cpu.cfs_quota_us", "50000\n")
    _write(cgroup, "cpu/docker/abc/cpu.cfs_period_us", "100000\n")
    profile = detect_host(proc_root=proc, cores=4, environ={"TE_CGROUP_ROOT": str(cgroup)}, cwd="/srv/app")
    assert profile == HostProfile(cores=1, memory_bytes=900 * MIB, small=True)
