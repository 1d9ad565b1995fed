"""Checking and measuring a space's kernels on the GPUs here, for any space: `autotune validate`
(a sample of legal configs, each checked on fresh inputs) and `autotune bench` (per shape the
default, the space's seed configs and a store's tuned config, validated, then timed with the
vendor baseline in interleaved rounds). Both run on the runner's pieces: its builder, its
isolated device workers and validator (CudaEvaluator), its timing protocol, and the artifact
index."""
