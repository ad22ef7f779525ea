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
}

MISTAKES = {
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
}
