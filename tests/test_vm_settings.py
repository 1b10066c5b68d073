"""VM DUT settings without a VM: the campaign schema, the accelerator choice, the testbed's VM settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from natbench.campaign import load_campaign
from natbench.testbed.lab import access as lab_access
from natbench.testbed.lab import vm
from natbench.testbed.lab.access import LabAccess, LabBackend, vm_settings

ROOT = Path(__file__).resolve().parents[1]


def test_lab_access_vm_settings() -> None:
    a = LabAccess(kind="lab", vm="jool", vcpus=2, memory=2048, accel="tcg")
    assert (a.vm, a.vcpus, a.memory, a.accel) == ("jool", 2, 2048, "tcg")
    assert LabAccess(kind="lab").vm is None
    with pytest.raises(ValidationError, match=r"set access\.vm too"):
        LabAccess(kind="lab", vcpus=2)
    with pytest.raises(ValidationError, match=r"does not apply with access\.vm"):
        LabAccess(kind="lab", vm="jool", namespace="x")
    with pytest.raises(ValidationError):
        LabAccess(kind="lab", vm="Jool VM")


def test_quickstart_jool_names_the_vm() -> None:
    campaign = load_campaign(ROOT / "campaigns" / "quickstart-jool.yaml")
    (dut,) = campaign.testbed.duts
    assert isinstance(dut.access, LabAccess) and dut.access.vm == "jool"
    vms = vm_settings([(d.name, d.access) for d in campaign.testbed.duts])
    assert vms is not None and len(vms) == 1
    name, settings = vms[0]
    assert (name, settings.image, settings.vcpus, settings.memory) == ("jool", "jool", 1, 1536)
    assert campaign.traffic.responder is not None and campaign.traffic.responder.value == "read"


def test_accel_tcg_when_asked_or_without_hardware_virtualisation(monkeypatch: pytest.MonkeyPatch) -> None:
    assert vm.choose_accel("tcg")[0] == ["tcg"]
    real = Path.read_text

    def cpuinfo(self: Path, *a: object, **k: object) -> str:
        return "flags\t\t: fpu sse2 hypervisor\n" if str(self) == "/proc/cpuinfo" else real(self)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", cpuinfo)
    monkeypatch.setattr(vm.os, "access", lambda path, mode: True)
    order, why = vm.choose_accel("auto")
    assert order == ["tcg"] and "no vmx/svm" in why
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: "flags\t\t: fpu vmx sse2\n")
    assert vm.choose_accel("auto")[0] == ["kvm", "tcg"]


def test_preflight_names_the_qemu_package(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    monkeypatch.setattr(shutil, "which", lambda tool: None)
    problems = LabBackend().problems(LabAccess(kind="lab", vm="jool"))
    assert problems[0] == (
        "qemu-system-x86_64 not found: install the Debian package qemu-system-x86 (apt-get install qemu-system-x86)"
    )
    assert LabBackend().problems(LabAccess(kind="lab")) == []
    # an image not built yet is built on first use: then what the build needs is a problem too
    monkeypatch.setattr(lab_access, "find_image", lambda name: None)
    problems = LabBackend().problems(LabAccess(kind="lab", vm="jool"))
    assert problems[0].startswith("qemu-system-x86_64 not found")
    assert "debootstrap not found: install the Debian package debootstrap (apt-get install debootstrap)" in problems
    # natbench doctor (no campaign): the namespace lab's tools, QEMU and every image natbench can build
    doctor = LabBackend().problems(None)
    assert doctor[0].startswith("the local lab needs ip, nft, sysctl, iptables, conntrack on PATH")
    assert "the VM image jool is not built: natbench lab image build jool (about 5 minutes)" in doctor
