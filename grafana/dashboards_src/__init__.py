"""The four dashboards (issue 15), one module each, built with grafanalib."""
