"""Reading Wikidata dumps: time values, claim extraction, downloads, the embedded sample."""
