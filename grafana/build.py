"""Write the dashboards as JSON: `python -m grafana.build` (or `make dashboards`).

Grafana's provisioning loads grafana/dashboards/*.json; the modules in
grafana/dashboards_src/ are their source. tests/test_dashboards.py fails when the two
differ, so regenerate and commit both together."""

import argparse
import json
from pathlib import Path

from grafanalib._gen import DashboardEncoder

from grafana.dashboards_src import labs, research, spend, system

OUT = Path(__file__).resolve().parent / "dashboards"
DASHBOARDS = {
    "labs": labs.dashboard,
    "spend": spend.dashboard,
    "research": research.dashboard,
    "system": system.dashboard,
}
"""File stem under grafana/dashboards/ -> the function that builds that dashboard."""


def render(name: str) -> str:
    """The JSON text of dashboard `name`, as committed."""
    data = DASHBOARDS[name]().to_json_data()
    return json.dumps(data, cls=DashboardEncoder, sort_keys=True, indent=2) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder to write into")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in DASHBOARDS:
        (args.out / f"{name}.json").write_text(render(name))


if __name__ == "__main__":
    main()
