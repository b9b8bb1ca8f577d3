"""Data files shipped with the package: the property list, the embedded sample, the model registry."""

from pathlib import Path

DATA_DIR = Path(__file__).parent
PROPERTIES_FILE = DATA_DIR / "properties.yaml"
SAMPLE_DIR = DATA_DIR / "sample"
SAMPLE_DUMPS_DIR = SAMPLE_DIR / "dumps"
SNAPSHOT_YEARS = ("2022", "2023", "2024", "2025")


def sample_dump_path(snapshot_year: str) -> Path:
    return SAMPLE_DUMPS_DIR / f"wikidata-{snapshot_year}1231-sample.json.gz"
