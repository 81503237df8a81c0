"""The stage runner every stage uses (claims, batches, progress) and the run records it keeps."""
