"""Prometheus text exposition on stdin -> JSON on stdout, parsed by the reference parser
(prometheus_client.parser, Debian's python3-prometheus-client). Used by metrics-scrape.ts:
the tests read /metrics the way Prometheus' own client library reads it."""
import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families

families = []
for family in text_string_to_metric_families(sys.stdin.read()):
    families.append(
        {
            "name": family.name,
            "type": family.type,
            "samples": [
                {
                    "name": s.name,
                    "labels": s.labels,
                    "value": None if math.isnan(s.value) else s.value,
                }
                for s in family.samples
            ],
        }
    )
json.dump(families, sys.stdout, allow_nan=True)
