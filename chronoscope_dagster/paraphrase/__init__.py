"""The paraphrased subset: questions rewritten by a model, kept where the filter passes."""
