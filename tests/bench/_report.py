"""The tail every benchmark shares: print the numbers and keep them in tests/output/<name>.json."""
import json
from pathlib import Path

OUTPUT = Path(__file__).resolve().parents[1] / "output"


def publish(name, numbers):
    text = json.dumps(numbers, indent=2)
    print(text)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / (name + ".json")).write_text(text + "\n")
