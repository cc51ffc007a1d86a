"""Grafana's dashboards as code: `python -m grafana.build` writes grafana/dashboards/*.json."""
