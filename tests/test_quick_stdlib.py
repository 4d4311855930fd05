"""The hook roads work out, with the few lines they hold, what the standard library modules they leave unloaded
(a codec, `sysconfig`) would have said: the same answer, without the import on every hook."""

from __future__ import annotations

import os
import sys
import sysconfig

from hypothesis import given
from hypothesis import strategies as st

from playbook.quick.launcher import SITE_PACKAGES_NAME, site_packages
from projections.quickroads import _utf16

# Any code point, lone surrogates included: a path Linux hands over can hold bytes Python decodes to them.
POINTS = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=())


@given(st.text(POINTS, max_size=60))
def test_the_slugs_code_units_are_utf16s(path: str) -> None:
    data = path.encode("utf-16-le", "surrogatepass")
    assert [unit for point in map(ord, path) for unit in _utf16(point)] == \
        [int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 2)]


def test_a_virtual_environments_site_packages_are_sysconfigs_venv_scheme(tmp_path, monkeypatch) -> None:
    """A venv with no record of its own (an installed tool's, a development one): where `venv` put them."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\n")
    where = {"base": str(venv), "platbase": str(venv), "installed_base": str(venv), "installed_platbase": str(venv)}
    expected = list(dict.fromkeys(sysconfig.get_path(name, "venv", where) for name in ("purelib", "platlib")))
    for path in expected:
        os.makedirs(path, exist_ok=True)
    assert all(version in path for path in expected)
    monkeypatch.setattr(sys, "executable", str(venv / "bin" / "python"))
    assert site_packages() == expected
    # The plugin's environment records them at its set-up, as its own interpreter named them: those win.
    (venv / SITE_PACKAGES_NAME).write_text(f"{tmp_path}\n")
    assert site_packages() == [str(tmp_path)]
