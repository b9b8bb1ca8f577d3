"""Render the embedded sample's TSV files into the four snapshot dumps.

python scripts/render_sample.py           # validate, print statistics, write the dumps
python scripts/render_sample.py --check   # validate and print statistics only
"""

from __future__ import annotations

import argparse
import json
import sys

from chronoscope_dagster.wikidata.sample import SampleError, load_sample, write_dumps


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="validate only; write nothing")
    args = parser.parse_args()
    try:
        sample = load_sample()
    except SampleError as error:
        print(error, file=sys.stderr)
        return 1
    print(json.dumps(sample.stats(), indent=2, ensure_ascii=False))
    if not args.check:
        for path in write_dumps(sample):
            print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
