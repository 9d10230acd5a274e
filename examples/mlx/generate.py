"""Tensor-parallel greedy generation with an mlx-lm model, in mlx-lm's
pattern: every rank builds the same Llama from a small config with random
weights (same seed; no download), model.shard(group) splits each layer's
projections over the ranks (two all_sums of activations per layer), and the
ranks decode the same tokens together. Rank 0 then runs the unsharded model
alone and checks that its greedy tokens and logits are the sharded ones.

    distcomm-launch --mlx -n 2 -- python3 examples/mlx/generate.py [--tokens 32]

The same program on MLX's own backends:

    mlx.launch -n 2 examples/mlx/generate.py                    # MLX's ring
    MLX_MPI_LIBNAME=libmpi.so.40 mpirun --allow-run-as-root -np 2 \\
        -x MLX_MPI_LIBNAME python3 examples/mlx/generate.py     # Open MPI

Prints the tokens, the decode rate, and "sharded tokens match the unsharded
model" (or exits 1 naming the first token or logit that differs).
"""
import argparse
import sys
import time

import mlx.core as mx
from mlx_lm.models import llama
from mlx_lm.models.cache import make_prompt_cache


def build(args):
    mx.random.seed(0)  # the same weights on every rank and for the check
    config = llama.ModelArgs(
        model_type="llama", hidden_size=args.hidden, num_hidden_layers=args.layers,
        intermediate_size=4 * args.hidden, num_attention_heads=8, num_key_value_heads=4,
        rms_norm_eps=1e-5, vocab_size=args.vocab, tie_word_embeddings=False)
    model = llama.Model(config)
    mx.eval(model.parameters())
    return model


def greedy(model, prompt, n):
    """n greedy tokens after prompt, the logits that chose each, and the
    decode time (tokens after the first: the latency-bound part)."""
    cache = make_prompt_cache(model)
    logits = model(prompt[None], cache=cache)[0, -1]
    tokens, rows = [], []
    t0 = None
    for i in range(n):
        tok = mx.argmax(logits)
        mx.eval(tok, logits)
        tokens.append(tok.item())
        rows.append(logits)
        if i == 0:
            t0 = time.perf_counter()
        logits = model(tok.reshape(1, 1), cache=cache)[0, -1]
    return tokens, mx.stack(rows), time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--no-check", action="store_true", help="skip rank 0's check")
    args = p.parse_args()

    group = mx.distributed.init()
    n, rank = group.size(), group.rank()
    prompt = mx.array([1, 17, 42, 7, 99, 3])
    model = build(args)
    model.shard(group)
    tokens, logits, secs = greedy(model, prompt, args.tokens)
    if rank != 0:
        return
    rate = (args.tokens - 1) / secs if secs > 0 else float("inf")
    print("tokens:", " ".join(map(str, tokens)))
    print(f"decode {rate:.1f} tokens/s on {n} ranks")
    if args.no_check:
        return
    want, want_logits, _ = greedy(build(args), prompt, args.tokens)
    diff = mx.max(mx.abs(logits - want_logits)).item()
    if tokens != want or diff > 1e-3:
        first = next((i for i, (a, b) in enumerate(zip(tokens, want)) if a != b), None)
        sys.exit(f"sharded run differs from the unsharded model: first token {first}, "
                 f"max logit difference {diff:.2e}")
    print(f"sharded tokens match the unsharded model (max logit difference {diff:.1e})")


if __name__ == "__main__":
    main()
