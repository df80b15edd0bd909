"""Results and the commands that read them: record schema, merge, gate, expectations, reports, trend, sweep."""
