"""Guards: the correctness gate and its hook, the gate audit, the trusted harness and the record's seals."""
