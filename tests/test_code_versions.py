"""Code versions come from the source an asset's computation uses: an edit changes the version
of the assets that use the edited module, and of no other."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import chronoscope_dagster

PACKAGE = Path(chronoscope_dagster.__file__).parent
VERSIONS = (
    "import json, sys\n"
    "from chronoscope_dagster.definitions import build_definitions\n"
    "graph = build_definitions(sys.argv[1]).resolve_asset_graph()\n"
    "print(json.dumps({k.to_user_string(): graph.get(k).code_version\n"
    "                  for k in graph.materializable_asset_keys}))\n"
)


def _versions(root: Path, home: Path) -> dict[str, str]:
    found = subprocess.run(
        [sys.executable, "-c", VERSIONS, str(home)],
        cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(found.stdout.strip().splitlines()[-1])


def test_editing_a_module_changes_the_versions_of_the_assets_using_it_only(tmp_path):
    root = tmp_path / "src"
    shutil.copytree(
        PACKAGE, root / "chronoscope_dagster", ignore=shutil.ignore_patterns("__pycache__")
    )
    before = _versions(root, tmp_path / "home")
    assert before == _versions(root, tmp_path / "home"), "versions are stable across loads"
    assert len(set(before.values())) > 10, "assets using different code have different versions"

    family = root / "chronoscope_dagster" / "chains" / "families" / "distinct_count.py"
    family.write_text(family.read_text() + "\nEDITED = True\n")
    after = _versions(root, tmp_path / "home")
    changed = {key for key in before if before[key] != after[key]}
    assert "family_distinct_count" in changed
    assert changed.isdisjoint({"claims", "labels", "lifespans", "fact_intervals", "truth"})
    assert changed.isdisjoint({"probe_corpus", "probe_runs", "probe_report"})

    templates = root / "chronoscope_dagster" / "data" / "templates" / "en.yaml"
    templates.write_text(templates.read_text() + "\n# edited\n")
    again = _versions(root, tmp_path / "home")
    assert (
        again["turns"] != after["turns"]
        or again["family_scope_switch"] != after["family_scope_switch"]
    ), "a template edit reaches the chains"
    assert again["claims"] == after["claims"]
