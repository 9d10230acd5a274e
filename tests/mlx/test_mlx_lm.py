"""An mlx-lm model over distcomm, tensor parallel and data parallel: a small llama from a
config with random weights (no hub), the same on every rank, sharded with
model.shard(group) as mlx-lm's generation does: its logits and its greedy
tokens equal one process's unsharded model. Each rank also computes the
unsharded answer itself, so nothing but the sharded run is compared."""

import os

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
import pytest
from mlx_lm.models import llama
from mlx_lm.models.cache import make_prompt_cache
from mlx.utils import tree_flatten

SIZE = int(os.environ.get("MLX_WORLD_SIZE", "1"))
WORLD = mx.distributed.init(strict=SIZE > 1, backend="mpi" if SIZE > 1 else "any")


def build():
    mx.random.seed(1234)  # identical weights on every rank
    args = llama.ModelArgs(model_type="llama", hidden_size=128,
                           num_hidden_layers=2, intermediate_size=256,
                           num_attention_heads=8, num_key_value_heads=4,
                           rms_norm_eps=1e-5, vocab_size=256)
    model = llama.Model(args)
    mx.eval(model.parameters())
    return model


def greedy(model, prompt, steps):
    """Decode with a KV cache, one token at a time (mlx-lm's pattern)."""
    cache = make_prompt_cache(model)
    logits = model(mx.array([prompt]), cache=cache)
    out = []
    for _ in range(steps):
        tok = mx.argmax(logits[0, -1]).item()
        out.append(tok)
        logits = model(mx.array([[tok]]), cache=cache)
    return out


@pytest.mark.skipif(SIZE not in (1, 2, 4), reason="heads split 1, 2 or 4 ways")
def test_sharded_model_equals_the_whole():
    prompt = [1, 17, 42, 99, 3, 250, 7, 64]
    whole = build()
    want_logits = whole(mx.array([prompt]))
    want_tokens = greedy(whole, prompt, 12)

    part = build()
    part.shard(WORLD)
    gate = part.model.layers[0].mlp.gate_proj.weight
    assert gate.shape[0] == 256 // SIZE  # really split
    got_logits = part(mx.array([prompt]))
    assert mx.allclose(got_logits, want_logits, atol=1e-4, rtol=1e-4).item(), \
        mx.abs(got_logits - want_logits).max().item()
    assert greedy(part, prompt, 12) == want_tokens
    # every rank decoded the same tokens
    mine = mx.array(want_tokens)
    assert mx.array_equal(mx.distributed.all_max(mine), mine).item()


def test_data_parallel_training_equals_one_process():
    # mlx-lm's trainer pattern: each rank takes its slice of the batch, the
    # gradients are averaged (average_gradients), the optimizer steps (SGD:
    # Adam would magnify the last bits of near-zero gradients); the result
    # equals one process training on the whole batch, and the loss falls.
    tokens = mx.random.randint(0, 256, (2 * SIZE, 17), key=mx.random.key(9))
    mine = tokens[2 * WORLD.rank():2 * WORLD.rank() + 2]

    def loss(model, batch):
        logits = model(batch[:, :-1])
        return nn.losses.cross_entropy(logits, batch[:, 1:]).mean()

    def train(model, batch, average):
        opt = optim.SGD(learning_rate=0.3)
        step = nn.value_and_grad(model, loss)
        losses = []
        for _ in range(8):
            value, grads = step(model, batch)
            if average:
                grads = nn.average_gradients(grads)
                value = mx.distributed.all_sum(value) / SIZE
            opt.update(model, grads)
            mx.eval(model.parameters(), opt.state, value)
            losses.append(value.item())
        return losses

    whole, part = build(), build()
    want = train(whole, tokens, False)
    got = train(part, mine, True)
    assert got[-1] < got[0] * 0.9, got
    assert all(abs(a - b) < 1e-3 * abs(b) for a, b in zip(got, want)), (got, want)
    for (name, a), (_, b) in zip(tree_flatten(part.parameters()),
                                 tree_flatten(whole.parameters())):
        assert mx.allclose(a, b, atol=1e-4, rtol=1e-3).item(), name
