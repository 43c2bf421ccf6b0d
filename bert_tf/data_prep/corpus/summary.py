"""The run's summary: what was read, skipped, dropped and written."""

import json

# Counter names, in the order the summary lists them.
COUNTERS = (
    "input_files",
    "input_bytes",
    "pages_read",
    "skipped_redirect",
    "skipped_namespace",
    "skipped_disambiguation",
    "records_read",
    "text_bytes_in",
    "dropped_lines_markup",
    "dropped_lines_no_letters",
    "dropped_lines_short",
    "dropped_too_short",
    "exact_duplicates",
    "near_duplicates",
    "documents",
    "sentences",
    "output_bytes",
    "shards",
)


class CorpusSummary:
    """Counts of a corpus run (`COUNTERS`), summed from parts.

    Example:

    ```python
    summary = CorpusSummary()
    summary.add({"pages_read": 1, "skipped_redirect": 1})
    print(summary.line())
    ```
    """

    def __init__(self, counts=None):
        self.counts = dict.fromkeys(COUNTERS, 0)
        self.add(counts or {})

    def add(self, counts):
        for name, value in counts.items():
            if name not in self.counts:
                raise KeyError(f"unknown corpus counter {name!r}")
            self.counts[name] += value

    def __getitem__(self, name):
        return self.counts[name]

    def as_json(self):
        """The summary as ``corpus_summary.json`` holds it."""
        c = self.counts
        return {
            "input_files": c["input_files"],
            "bytes_in": c["input_bytes"],
            "pages_read": c["pages_read"],
            "pages_skipped": {
                "redirect": c["skipped_redirect"],
                "namespace": c["skipped_namespace"],
                "disambiguation": c["skipped_disambiguation"],
            },
            "records_read": c["records_read"],
            "text_bytes_extracted": c["text_bytes_in"],
            "lines_dropped": {
                "leftover_markup": c["dropped_lines_markup"],
                "no_letters": c["dropped_lines_no_letters"],
                "too_few_words": c["dropped_lines_short"],
            },
            "documents_dropped_too_short": c["dropped_too_short"],
            "exact_duplicates_removed": c["exact_duplicates"],
            "near_duplicates_removed": c["near_duplicates"],
            "documents": c["documents"],
            "sentences": c["sentences"],
            "bytes_out": c["output_bytes"],
            "shards": c["shards"],
        }

    def text(self):
        """The summary as printed at the end of a run."""
        return json.dumps(self.as_json(), indent=2) + "\n"
