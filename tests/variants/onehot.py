"""Stage 'onehot': other correct one-hot encodings, and the mistakes the hidden suite must name."""

CORRECT = {
    "comparison with arange, einsum": {
        "embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                check_ids(ids, num_classes)
                classes = torch.arange(num_classes, device=ids.device)  # (V,)
                return (ids.unsqueeze(-1) == classes).to(dtype)  # (..., V)
        ''',
        "embeddings:embed_via_onehot": '''
            def embed_via_onehot(weight, ids):
                onehot = one_hot(ids.to(weight.device), weight.shape[0], weight.dtype)
                return torch.einsum("...v,vd->...d", onehot, weight)
        ''',
    },
    "index_put on a flat table, torch.matmul": {
        "embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                flat = ids.reshape(-1).long()
                out = torch.zeros(flat.numel(), num_classes, dtype=dtype, device=ids.device)
                out[torch.arange(flat.numel(), device=ids.device), flat] = 1
                return out.reshape(*ids.shape, num_classes)
        ''',
        "embeddings:embed_via_onehot": '''
            def embed_via_onehot(weight, ids):
                V, d = weight.shape
                onehot = one_hot(ids, V, dtype=weight.dtype).reshape(-1, V)
                return torch.matmul(onehot, weight).reshape(*ids.shape, d)
        ''',
    },
    "rows of the identity, a weighted sum": {
        "embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                return torch.eye(num_classes, dtype=dtype, device=ids.device)[ids.long()]
        ''',
        "embeddings:embed_via_onehot": '''
            def embed_via_onehot(weight, ids):
                onehot = one_hot(ids, weight.shape[0], weight.dtype)  # (..., V)
                return (onehot.unsqueeze(-1) * weight).sum(dim=-2)  # (..., V, d) -> (..., d)
        ''',
    },
    "a __main__ self-check against F.one_hot (dead code: not read)": {
        "embeddings:expected_dot_std": '''
            def expected_dot_std(std, d_model):
                return std**2 * math.sqrt(d_model)


            if __name__ == "__main__":
                # python embeddings.py: F.one_hot is the reference here, never the answer
                from torch.nn.functional import one_hot as pytorch_one_hot

                ids = torch.tensor([3, 0, 3])
                assert torch.equal(one_hot(ids, 4), pytorch_one_hot(ids, 4).float())
        ''',
    },
    # A range check inline, reading the ids' values with no special case for the meta device:
    # the meta pass must answer those reads (tests/test_meta_pass.py grades it both ways).
    "an inline range check that reads the ids' values as int64, tensordot": {
        "embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                if ((ids.long() < 0) | (ids.long() >= num_classes)).any():
                    raise IndexError(f"an id is outside [0, {num_classes})")
                out = torch.zeros(*ids.shape, num_classes, dtype=dtype, device=ids.device)
                return out.scatter_(-1, ids.long().unsqueeze(-1), 1)
        ''',
        "embeddings:embed_via_onehot": '''
            def embed_via_onehot(weight, ids):
                onehot = one_hot(ids.to(weight.device), weight.shape[0], weight.dtype)
                return torch.tensordot(onehot, weight, dims=1)  # sums over V
        ''',
    },
}

MISTAKES = {
    "one_hot squeezes its output (ids of shape (3, 1) give (3, V))": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                check_ids(ids, num_classes)
                out = torch.zeros(*ids.shape, num_classes, dtype=dtype, device=ids.device)
                return out.scatter_(-1, ids.unsqueeze(-1).long(), 1).squeeze()
        '''},
        "test_one_hot_rows", "a batch of one sequence",
    ),
    # Right with few classes, wrong at the edges of the ids' dtype, which the hidden checks
    # send: it refuses every uint8 id when num_classes is 300 (300 wraps to 44).
    "an inline range check in the ids' own dtype (num_classes wraps in uint8 and int8)": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                if ((ids < 0) | (ids >= num_classes)).any():
                    raise IndexError(f"an id is outside [0, {num_classes})")
                out = torch.zeros(*ids.shape, num_classes, dtype=dtype, device=ids.device)
                return out.scatter_(-1, ids.long().unsqueeze(-1), 1)
        '''},
        "test_integer_ids_accepted", "does not fit in",
    ),
    "the classes counted in the ids' own dtype (arange wraps: 255 matches class 255 and 511)": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                check_ids(ids, num_classes)
                classes = torch.arange(num_classes, dtype=ids.dtype, device=ids.device)
                return (ids.unsqueeze(-1) == classes).to(dtype)
        '''},
        "test_integer_ids_accepted", "does not fit in",
    ),
    "F.one_hot": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                return torch.nn.functional.one_hot(ids.long(), num_classes).to(dtype)
        '''},
        "test_one_hot_written_by_hand", "F.one_hot",
    ),
    "num_classes guessed from ids.max() + 1": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                V = int(ids.max()) + 1
                out = torch.zeros(*ids.shape, V, dtype=dtype, device=ids.device)
                return out.scatter_(-1, ids.unsqueeze(-1).long(), 1)
        '''},
        "test_num_classes_is_given", "ids.max() + 1",
    ),
    "integer one-hot": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                classes = torch.arange(num_classes, device=ids.device)
                return (ids.unsqueeze(-1) == classes).long()
        '''},
        "test_one_hot_dtype", "must be floats",
    ),
    "dtype argument ignored": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                out = torch.zeros(*ids.shape, num_classes, device=ids.device)
                return out.scatter_(-1, ids.unsqueeze(-1).long(), 1)
        '''},
        "test_one_hot_dtype", "dtype=dtype",
    ),
    "hard-coded cpu": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                out = torch.zeros(*ids.shape, num_classes, dtype=dtype, device="cpu")
                return out.scatter_(-1, ids.unsqueeze(-1).long(), 1)
        '''},
        "test_one_hot_device", "hard-coded",
    ),
    "hard-coded cpu, another error elsewhere": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                if ids.device.type == "meta":
                    raise RuntimeError("shape mismatch")
                out = torch.zeros(*ids.shape, num_classes, dtype=dtype, device="cpu")
                return out.scatter_(-1, ids.unsqueeze(-1).long(), 1)
        '''},
        "test_one_hot_device", "same call on CPU tensors ran",
    ),
    "embed_via_onehot hard-coded cpu, another error elsewhere": (
        {"embeddings:embed_via_onehot": '''
            def embed_via_onehot(weight, ids):
                if weight.device.type != "cpu":
                    raise TypeError("expected a weight")
                return one_hot(ids, weight.shape[0], weight.dtype).cpu() @ weight.cpu()
        '''},
        "test_embed_via_onehot_dtype_and_device", "same call on CPU tensors ran",
    ),
    "a float32 detour": (
        {"embeddings:embed_via_onehot": '''
            def embed_via_onehot(weight, ids):
                onehot = one_hot(ids, weight.shape[0])  # float32
                return (onehot @ weight.float()).to(weight.dtype)
        '''},
        "test_embed_via_onehot_is_the_lookup", "float32",
    ),
    "a float32 one-hot with a float64 weight": (
        {"embeddings:embed_via_onehot": '''
            def embed_via_onehot(weight, ids):
                return one_hot(ids, weight.shape[0]) @ weight
        '''},
        "test_embed_via_onehot_is_the_lookup", "one_hot(ids, V, weight.dtype)",
    ),
    "the one-hot transposed (E @ onehot^T)": (
        {"embeddings:embed_via_onehot": '''
            def embed_via_onehot(weight, ids):
                onehot = one_hot(ids.reshape(-1), weight.shape[0], weight.dtype)  # (N, V)
                return (weight.T @ onehot.T).reshape(*ids.shape, -1)
        '''},
        "test_embed_via_onehot_is_the_lookup", "differs from the lookup",
    ),
    "F.one_hot under another name": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                from torch.nn.functional import one_hot as encode
                return encode(ids.long(), num_classes).to(dtype)
        '''},
        "test_one_hot_written_by_hand", "F.one_hot",
    ),
    "F.one_hot inside torch.distributions (seen only while it runs)": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                hit = ids.unsqueeze(-1) == torch.arange(num_classes, device=ids.device)
                logits = torch.where(hit, 0.0, float("-inf"))  # a sure draw of each id
                return torch.distributions.OneHotCategorical(logits=logits).sample().to(dtype)
        '''},
        "test_one_hot_written_by_hand", "F.one_hot",
    ),
    "embed_via_onehot looks the rows up (weight[ids]), no product": (
        {"embeddings:embed_via_onehot": '''
            def embed_via_onehot(weight, ids):
                return weight[ids.long()]
        '''},
        "test_embed_via_onehot_is_a_product", "every row",
    ),
    "the product, its NaN and inf made finite (nan_to_num)": (
        {"embeddings:embed_via_onehot": '''
            def embed_via_onehot(weight, ids):
                onehot = one_hot(ids.to(weight.device), weight.shape[0], weight.dtype)
                return torch.nan_to_num(onehot @ weight)  # "cleaned" of the rows' inf and NaN
        '''},
        "test_embed_via_onehot_is_a_product", "nan_to_num",
    ),
    "the lookup, then nan_to_num (no product, no NaN)": (
        {"embeddings:embed_via_onehot": '''
            def embed_via_onehot(weight, ids):
                return torch.nan_to_num(weight[ids.long()])
        '''},
        "test_embed_via_onehot_is_a_product", "every row",
    ),
    "one_hot clamps the caller's ids in place (values kept, a write all the same)": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                if ids.dtype == torch.int64:
                    ids.clamp_(0, num_classes - 1)  # the ids are in range: no value changes
                out = torch.zeros(*ids.shape, num_classes, dtype=dtype, device=ids.device)
                return out.scatter_(-1, ids.long().unsqueeze(-1), 1)
        '''},
        "test_ids_and_weight_are_left_unchanged", "changed the ids",
    ),
    "the one-hot built, then its argmax looked up": (
        {"embeddings:embed_via_onehot": '''
            def embed_via_onehot(weight, ids):
                onehot = one_hot(ids, weight.shape[0], weight.dtype)
                return weight[onehot.argmax(dim=-1)]  # the same rows, without the product
        '''},
        "test_embed_via_onehot_is_a_product", "every row",
    ),
    "an inline range check, then a hard-coded cpu": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                if ((ids < 0) | (ids >= num_classes)).any():
                    raise IndexError(f"an id is outside [0, {num_classes})")
                out = torch.zeros(*ids.shape, num_classes, dtype=dtype, device="cpu")
                return out.scatter_(-1, ids.cpu().long().unsqueeze(-1), 1)
        '''},
        "test_one_hot_device", "hard-coded",
    ),
    "the caller's ids changed in place (unsqueeze_)": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                out = torch.zeros(*ids.shape, num_classes, dtype=dtype, device=ids.device)
                return out.scatter_(-1, ids.long().unsqueeze_(-1), 1)  # ids itself, if int64
        '''},
        "test_ids_and_weight_are_left_unchanged", "changed the ids",
    ),
    "scatter_ with the ids as they are (no .long())": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                out = torch.zeros(*ids.shape, num_classes, dtype=dtype, device=ids.device)
                return out.scatter_(-1, ids.unsqueeze(-1), 1)
        '''},
        "test_integer_ids_accepted", "int64",
    ),
    "rows of the identity indexed by the ids as they are (uint8 read as a mask)": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                return torch.eye(num_classes, dtype=dtype, device=ids.device)[ids]
        '''},
        "test_integer_ids_accepted", "mask",
    ),
    "ids.view(-1) (non-contiguous ids refused)": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                flat = ids.view(-1).long()
                out = torch.zeros(flat.numel(), num_classes, dtype=dtype, device=ids.device)
                out[torch.arange(flat.numel(), device=ids.device), flat] = 1
                return out.view(*ids.shape, num_classes)
        '''},
        "test_integer_ids_accepted", "non-contiguous",
    ),
    "num_classes renamed (V)": (
        {"embeddings:one_hot": '''
            def one_hot(ids, V, dtype=torch.float32):
                out = torch.zeros(*ids.shape, V, dtype=dtype, device=ids.device)
                return out.scatter_(-1, ids.long().unsqueeze(-1), 1)
        '''},
        "test_num_classes_is_given", "by name",
    ),
    "embed_via_onehot's weight renamed (E)": (
        {"embeddings:embed_via_onehot": '''
            def embed_via_onehot(E, ids):
                return one_hot(ids.to(E.device), E.shape[0], E.dtype) @ E
        '''},
        "test_embed_via_onehot_is_the_lookup", "by name",
    ),
    "one_hot's dtype taken by keyword only": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, *, dtype=torch.float32):
                out = torch.zeros(*ids.shape, num_classes, dtype=dtype, device=ids.device)
                return out.scatter_(-1, ids.long().unsqueeze(-1), 1)
        '''},
        "test_one_hot_dtype", "positional",
    ),
    # Issue 29: the device pass sees a tensor made on a fixed device, as a GPU does.
    "one_hot compares the ids with a CPU arange": (
        {"embeddings:one_hot": '''
            def one_hot(ids, num_classes, dtype=torch.float32):
                check_ids(ids, num_classes)
                classes = torch.arange(num_classes)  # made on the CPU, whatever ids' device
                return (ids.long().unsqueeze(-1) == classes).to(dtype)
        '''},
        "test_one_hot_device", "not on the expected device",
    ),
}
