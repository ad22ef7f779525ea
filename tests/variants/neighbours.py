"""Stage 'neighbours': other correct cosines and rankings, and the mistakes the suite must name."""

CORRECT = {
    "F.normalize, full stable sort": {
        "embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                a = torch.nn.functional.normalize(a, dim=-1, eps=eps)
                b = torch.nn.functional.normalize(b, dim=-1, eps=eps)
                return (a * b).sum(dim=-1)
        ''',
        "embeddings:_top_k": '''
            def _top_k(E, query, k, exclude):
                if not 1 <= k <= E.shape[0] - len(set(exclude)):
                    raise ValueError(f"k={k} is not from 1 to the rows that may be returned")
                sims = cosine_similarity(E, query)  # (V,)
                sims[list(exclude)] = -math.inf
                order = torch.sort(sims, descending=True, stable=True).indices[:k]
                return order, sims[order]
        ''',
    },
    "divide after, sorted() with a (-score, id) key, a mask": {
        "embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                dot = (a * b).sum(dim=-1)
                lengths = a.norm(dim=-1).clamp_min(eps) * b.norm(dim=-1).clamp_min(eps)
                return dot / lengths
        ''',
        "embeddings:_top_k": '''
            def _top_k(E, query, k, exclude):
                if not 1 <= k <= E.shape[0] - len(set(exclude)):
                    raise ValueError(f"k={k} is not from 1 to the rows that may be returned")
                sims = cosine_similarity(E, query)
                scores = sims.tolist()
                candidates = [i for i in range(len(scores)) if i not in set(exclude)]
                best = sorted(candidates, key=lambda i: (-scores[i], i))[:k]
                ids = torch.tensor(best, dtype=torch.long, device=sims.device)
                return ids, sims[ids]
        ''',
        "embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, token, k):
                if isinstance(token, torch.Tensor) and token.dim() == 1:
                    return _top_k(E, token.to(E), k, [])
                index = int(token)
                return _top_k(E, E[index], k, [index])
        ''',
    },
    "F.cosine_similarity, argsort of the negated scores, query c + (b - a)": {
        "embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                return torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=eps)
        ''',
        "embeddings:_top_k": '''
            def _top_k(E, query, k, exclude):
                if not 1 <= k <= E.shape[0] - len(set(exclude)):
                    raise ValueError(f"k={k} is not from 1 to the rows that may be returned")
                sims = cosine_similarity(E, query)
                mask = torch.zeros_like(sims, dtype=torch.bool)
                mask[list(exclude)] = True
                masked = sims.masked_fill(mask, -math.inf)
                order = torch.argsort(-masked, stable=True)[:k]
                return order, masked[order]
        ''',
        "embeddings:analogy": '''
            def analogy(E, a, b, c, k=1, exclude_inputs=True):
                query = E[c] + (E[b] - E[a])
                return _top_k(E, query, k, [a, b, c] if exclude_inputs else [])
        ''',
    },
    "one matmul over the table, divide after, topk plus a tie-break": {
        "embeddings:_top_k": '''
            def _top_k(E, query, k, exclude):
                if not 1 <= k <= E.shape[0] - len(set(exclude)):
                    raise ValueError(f"k={k} is not from 1 to the rows that may be returned")
                dots = E @ query  # (V,)
                sims = dots / (E.norm(dim=1).clamp_min(1e-8) * query.norm().clamp_min(1e-8))
                sims[list(exclude)] = -math.inf
                kth = sims.topk(k).values[-1]
                tied = torch.nonzero(sims >= kth).squeeze(1)  # ascending ids
                order = torch.sort(sims[tied], descending=True, stable=True).indices[:k]
                return tied[order], sims[tied[order]]
        ''',
    },
    "vector_norm and maximum, .item() for a 0-d token, the query as (b + c) - a": {
        "embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                na = torch.linalg.vector_norm(a, dim=-1, keepdim=True)
                nb = torch.linalg.vector_norm(b, dim=-1, keepdim=True)
                floor = torch.tensor(eps, dtype=na.dtype, device=na.device)
                return ((a / torch.maximum(na, floor)) * (b / torch.maximum(nb, floor))).sum(-1)
        ''',
        "embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, token, k):
                if isinstance(token, torch.Tensor) and token.dim() == 1:
                    return _top_k(E, token.to(E.device, E.dtype), k, [])
                index = token.item() if isinstance(token, torch.Tensor) else token
                return _top_k(E, E[index], k, [index])
        ''',
        "embeddings:analogy": '''
            def analogy(E, a, b, c, k=1, exclude_inputs=True):
                query = torch.add(E[b], E[c]).sub(E[a])
                return _top_k(E, query, k, [a, b, c] if exclude_inputs else [])
        ''',
    },
}

MISTAKES = {
    "cosine_neighbours returns its ids as int32": (
        {"embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, token, k):
                if isinstance(token, torch.Tensor) and token.dim() == 1:
                    if token.shape[0] != E.shape[1]:
                        raise ValueError("the query vector's length is not E's row length")
                    ids, sims = _top_k(E, token.to(E.device, E.dtype), k, [])
                else:
                    index = _row_index(E, token, "token")
                    ids, sims = _top_k(E, E[index], k, [index])
                return ids.int(), sims  # "ids fit in 32 bits"
        '''},
        "test_neighbours_match_reference", "expected torch.int64",
    ),
    "cosine_similarity squeezes its result (a one-row table gives a 0-D result)": (
        {"embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                a = a / a.norm(dim=-1, keepdim=True).clamp_min(eps)
                b = b / b.norm(dim=-1, keepdim=True).clamp_min(eps)
                return (a * b).sum(dim=-1).squeeze()
        '''},
        "test_cosine_similarity_broadcasts", "expected (1,)",
    ),
    # Issue 16's sweeps: a token at the edge of its dtype, an input given twice, a float64 table.
    "the token compared with V as it is (a uint8 255 is >= 300 in uint8)": (
        {"embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, token, k):
                if isinstance(token, torch.Tensor) and token.dim() == 1:
                    return _top_k(E, token.to(E.device, E.dtype), k, [])
                if token < 0 or token >= E.shape[0]:
                    raise IndexError(f"token {token} is outside the table's rows")
                index = int(token)
                return _top_k(E, E[index], k, [index])
        '''},
        "test_neighbours_match_reference", "does not fit in",
    ),
    "analogy's k bound counts three inputs, not the distinct ones": (
        {"embeddings:analogy": '''
            def analogy(E, a, b, c, k=1, exclude_inputs=True):
                a, b, c = (_row_index(E, t, name) for t, name in ((a, "a"), (b, "b"), (c, "c")))
                if exclude_inputs and not 1 <= k <= E.shape[0] - 3:
                    raise ValueError(f"k must be from 1 to {E.shape[0] - 3}, got {k}")
                return _top_k(E, E[b] - E[a] + E[c], k, [a, b, c] if exclude_inputs else [])
        '''},
        "test_k_out_of_range_refused", "two distinct inputs",
    ),
    "eps added to the product of the lengths (a.b / (|a| |b| + eps))": (
        {"embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                return (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1) + eps)
        '''},
        "test_cosine_similarity_values", "eps is the least length of each vector",
    ),
    "float32 sims from a float64 table": (
        {"embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, token, k):
                if isinstance(token, torch.Tensor) and token.dim() == 1:
                    ids, sims = _top_k(E, token.to(E.device, E.dtype), k, [])
                else:
                    index = _row_index(E, token, "token")
                    ids, sims = _top_k(E, E[index], k, [index])
                return ids, sims.float()  # float32 is enough for a ranking? not as promised
        '''},
        "test_neighbours_match_reference", "expected torch.float64",
    ),
    "no eps (NaN for a zero vector)": (
        {"embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                a = a / a.norm(dim=-1, keepdim=True)
                return (a * (b / b.norm(dim=-1, keepdim=True))).sum(-1)
        '''},
        "test_zero_vectors_score_zero", "NaN",
    ),
    "dot product": (
        {"embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                return (a * b).sum(dim=-1)
        '''},
        "test_cosine_similarity_values", "dot product",
    ),
    "no broadcasting (a @ b)": (
        {"embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                a = a / a.norm(dim=-1, keepdim=True).clamp_min(eps)
                b = b / b.norm(dim=-1, keepdim=True).clamp_min(eps)
                return a @ b.T if b.dim() > 1 else a @ b
        '''},
        "test_cosine_similarity_broadcasts", "broadcast",
    ),
    "query excluded by position (topk(k + 1)[1:])": (
        {"embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, token, k):
                if isinstance(token, torch.Tensor) and token.dim() == 1:
                    return _top_k(E, token, k, [])
                sims = cosine_similarity(E, E[int(token)])
                order = torch.sort(sims, descending=True, stable=True).indices[1 : k + 1]
                return order, sims[order]
        '''},
        "test_query_excluded_by_index", "by its index",
    ),
    "every row equal to the query excluded": (
        {"embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, token, k):
                if isinstance(token, torch.Tensor) and token.dim() == 1:
                    return _top_k(E, token, k, [])
                sims = cosine_similarity(E, E[int(token)])
                same = torch.nonzero(sims > 1 - 1e-6).flatten().tolist()
                return _top_k(E, E[int(token)], k, same)
        '''},
        "test_query_excluded_by_index", "must come first",
    ),
    "ascending order": (
        {"embeddings:_top_k": '''
            def _top_k(E, query, k, exclude):
                if not 1 <= k <= E.shape[0] - len(set(exclude)):
                    raise ValueError(f"k={k} is not from 1 to the rows that may be returned")
                sims = cosine_similarity(E, query)
                sims[list(exclude)] = math.inf
                order = torch.sort(sims, stable=True).indices[:k]
                return order, sims[order]
        '''},
        "test_neighbours_match_reference", "descending",
    ),
    "ties reversed (an ascending sort, flipped)": (
        {"embeddings:_top_k": '''
            def _top_k(E, query, k, exclude):
                if not 1 <= k <= E.shape[0] - len(set(exclude)):
                    raise ValueError(f"k={k} is not from 1 to the rows that may be returned")
                sims = cosine_similarity(E, query)
                sims[list(exclude)] = -math.inf
                order = torch.sort(sims, stable=True).indices.flip(0)[:k]
                return order, sims[order]
        '''},
        "test_ties_go_to_smaller_id", "smaller id",
    ),
    "a query vector excludes its nearest row": (
        {"embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, token, k):
                if isinstance(token, torch.Tensor) and token.dim() == 1:
                    nearest = int(cosine_similarity(E, token).argmax())
                    return _top_k(E, token, k, [nearest])
                return _top_k(E, E[int(token)], k, [int(token)])
        '''},
        "test_query_vector_excludes_nothing", "nothing is excluded",
    ),
    "analogy keeps its inputs": (
        {"embeddings:analogy": '''
            def analogy(E, a, b, c, k=1, exclude_inputs=True):
                return _top_k(E, E[b] - E[a] + E[c], k, [])
        '''},
        "test_analogy_excludes_inputs", "Nissim",
    ),
    "analogy always leaves its inputs out": (
        {"embeddings:analogy": '''
            def analogy(E, a, b, c, k=1, exclude_inputs=True):
                return _top_k(E, E[b] - E[a] + E[c], k, [a, b, c])
        '''},
        "test_analogy_excludes_inputs", "exclude_inputs=False",
    ),
    "analogy the wrong way round (E[a] - E[b] + E[c])": (
        {"embeddings:analogy": '''
            def analogy(E, a, b, c, k=1, exclude_inputs=True):
                exclude = [a, b, c] if exclude_inputs else []
                return _top_k(E, E[a] - E[b] + E[c], k, exclude)
        '''},
        "test_analogy_direction", "E[b] - E[a] + E[c]",
    ),
    "eps ignored (always 1e-8)": (
        {"embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                a = a / a.norm(dim=-1, keepdim=True).clamp_min(1e-8)
                b = b / b.norm(dim=-1, keepdim=True).clamp_min(1e-8)
                return (a * b).sum(dim=-1)
        '''},
        "test_cosine_similarity_values", "eps",
    ),
    "eps clamps the product of the lengths": (
        {"embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                lengths = a.norm(dim=-1) * b.norm(dim=-1)
                return (a * b).sum(dim=-1) / lengths.clamp_min(eps)
        '''},
        "test_cosine_similarity_values", "each length",
    ),
    "cosine in float32 whatever the inputs": (
        {"embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                a, b = a.float(), b.float()
                a = a / a.norm(dim=-1, keepdim=True).clamp_min(eps)
                b = b / b.norm(dim=-1, keepdim=True).clamp_min(eps)
                return (a * b).sum(dim=-1)
        '''},
        "test_cosine_similarity_values", "float64",
    ),
    "cosine_similarity divides its inputs in place": (
        {"embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                a /= a.norm(dim=-1, keepdim=True).clamp_min(eps)
                b = b / b.norm(dim=-1, keepdim=True).clamp_min(eps)
                return (a * b).sum(dim=-1)
        '''},
        "test_inputs_are_left_unchanged", "changed",
    ),
    "cosine_neighbours normalises the caller's table in place (the ranking unchanged)": (
        {"embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, token, k):
                E /= E.norm(dim=-1, keepdim=True).clamp_min(1e-8)  # unit rows, once
                if isinstance(token, torch.Tensor) and token.dim() == 1:
                    if token.shape[0] != E.shape[1]:
                        raise ValueError("the query vector's length is not E's row length")
                    return _top_k(E, token.to(E.device, E.dtype), k, [])
                index = _row_index(E, token, "token")
                return _top_k(E, E[index], k, [index])
        '''},
        "test_inputs_are_left_unchanged", "changed",
    ),
    "analogy builds its query in place, in E[b]": (
        {"embeddings:analogy": '''
            def analogy(E, a, b, c, k=1, exclude_inputs=True):
                query = E[b]  # a view of row b: the in-place steps below change E
                query -= E[a]
                query += E[c]
                return _top_k(E, query.clone(), k, [a, b, c] if exclude_inputs else [])
        '''},
        "test_inputs_are_left_unchanged", "changed",
    ),
    "a 0-d token tensor used as an index as it is (uint8 reads as a mask)": (
        {"embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, token, k):
                if isinstance(token, torch.Tensor) and token.dim() == 1:
                    return _top_k(E, token.to(E.device, E.dtype), k, [])
                return _top_k(E, E[token], k, [token])
        '''},
        "test_neighbours_match_reference", "int(token)",
    ),
    "cosine_neighbours' token renamed (query)": (
        {"embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, query, k):
                if isinstance(query, torch.Tensor) and query.dim() == 1:
                    return _top_k(E, query.to(E.device, E.dtype), k, [])
                return _top_k(E, E[int(query)], k, [int(query)])
        '''},
        "test_neighbours_match_reference", "by name",
    ),
    "k = all the rows that may be returned, refused": (
        {"embeddings:_top_k": '''
            def _top_k(E, query, k, exclude):
                if not 1 <= k < E.shape[0] - len(set(exclude)):
                    raise ValueError(f"k={k} is not from 1 to the rows that may be returned")
                sims = cosine_similarity(E, query)
                sims[list(exclude)] = -math.inf
                order = torch.sort(sims, descending=True, stable=True).indices[:k]
                return order, sims[order]
        '''},
        "test_k_out_of_range_refused", "may be returned",
    ),
    "k checked as if one row were always excluded": (
        {"embeddings:_top_k": '''
            def _top_k(E, query, k, exclude):
                if not 1 <= k <= E.shape[0] - 1:
                    raise ValueError(f"k={k} is not from 1 to the rows that may be returned")
                sims = cosine_similarity(E, query)
                sims[list(exclude)] = -math.inf
                order = torch.sort(sims, descending=True, stable=True).indices[:k]
                return order, sims[order]
        '''},
        "test_k_out_of_range_refused", "may be returned",
    ),
    "ties reversed for a query vector": (
        {"embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, token, k):
                if isinstance(token, torch.Tensor) and token.dim() == 1:
                    sims = cosine_similarity(E, token.to(E.device, E.dtype))
                    order = torch.sort(sims, stable=True).indices.flip(0)[:k]  # ties reversed
                    return order, sims[order]
                return _top_k(E, E[int(token)], k, [int(token)])
        '''},
        "test_ties_go_to_smaller_id", "smaller id",
    ),
    "ties reversed in the analogy": (
        {"embeddings:analogy": '''
            def analogy(E, a, b, c, k=1, exclude_inputs=True):
                sims = cosine_similarity(E, E[b] - E[a] + E[c])
                if exclude_inputs:
                    sims[[a, b, c]] = -math.inf
                order = torch.sort(sims, stable=True).indices.flip(0)[:k]  # ties reversed
                return order, sims[order]
        '''},
        "test_ties_go_to_smaller_id", "smaller id",
    ),
    "analogy's k and exclude_inputs in the other order": (
        {"embeddings:analogy": '''
            def analogy(E, a, b, c, exclude_inputs=True, k=1):
                return _top_k(E, E[b] - E[a] + E[c], k, [a, b, c] if exclude_inputs else [])
        '''},
        "test_analogy_excludes_inputs", "positionally",
    ),
    # Issue 29: dtypes other than float64.
    "float64 sims from a float32 table (promoted for precision)": (
        {"embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, token, k):
                if isinstance(token, torch.Tensor) and token.dim() == 1:
                    ids, sims = _top_k(E, token.to(E.device, E.dtype), k, [])
                else:
                    index = _row_index(E, token, "token")
                    ids, sims = _top_k(E, E[index], k, [index])
                return ids, sims.double()  # "more precise", but not in E's dtype
        '''},
        "test_neighbours_match_reference", "expected torch.float32",
    ),
    "a float64 query vector kept in float64 against a float32 table": (
        {"embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, token, k):
                if isinstance(token, torch.Tensor) and token.dim() == 1:
                    if not 1 <= k <= E.shape[0]:
                        raise ValueError(f"k must be from 1 to {E.shape[0]}, got {k}")
                    sims = cosine_similarity(E, token.to(E.device))  # promoted to float64
                    order = torch.sort(sims, descending=True, stable=True).indices[:k]
                    return order, sims[order]
                index = _row_index(E, token, "token")
                return _top_k(E, E[index], k, [index])
        '''},
        "test_neighbours_match_reference", "a query vector (torch.float64)",
    ),
    "a bfloat16 cosine computed and returned in float32": (
        {"embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                if a.dtype in (torch.float16, torch.bfloat16):
                    a, b = a.float(), b.float()  # half precision is too coarse for a norm
                a = a / a.norm(dim=-1, keepdim=True).clamp_min(eps)
                b = b / b.norm(dim=-1, keepdim=True).clamp_min(eps)
                return (a * b).sum(dim=-1)
        '''},
        "test_cosine_similarity_values", "expected torch.bfloat16",
    ),
    "a cosine of two dtypes computed in a's dtype": (
        {"embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                b = b.to(a.dtype)  # one dtype for the arithmetic
                a = a / a.norm(dim=-1, keepdim=True).clamp_min(eps)
                b = b / b.norm(dim=-1, keepdim=True).clamp_min(eps)
                return (a * b).sum(dim=-1)
        '''},
        "test_cosine_similarity_values", "torch.float64) on cpu: dtype torch.float32",
    ),
    # Issue 29: devices. Each runs on the CPU; on a GPU (or the meta device of a CPU-only
    # grader's device pass) it makes or leaves a tensor on the CPU.
    "cosine_similarity's eps as a one-element CPU tensor": (
        {"embeddings:cosine_similarity": '''
            def cosine_similarity(a, b, eps=1e-8):
                # one-element floors, on the CPU whatever the inputs' device
                a = a / torch.maximum(a.norm(dim=-1, keepdim=True), torch.full((1,), eps,
                                                                               dtype=a.dtype))
                b = b / torch.maximum(b.norm(dim=-1, keepdim=True), torch.full((1,), eps,
                                                                               dtype=b.dtype))
                return (a * b).sum(dim=-1)
        '''},
        "test_cosine_similarity_values", "the same call on CPU tensors ran",
    ),
    "_top_k excludes rows through a mask made on the CPU": (
        {"embeddings:_top_k": '''
            def _top_k(E, query, k, exclude):
                available = E.shape[0] - len(set(exclude))
                if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= available:
                    raise ValueError(f"k must be from 1 to {available}, got {k!r}")
                sims = cosine_similarity(E, query)
                mask = torch.zeros(E.shape[0], dtype=torch.bool)  # on the CPU
                mask[exclude] = True
                order = torch.sort(sims.masked_fill(mask, -math.inf), descending=True,
                                   stable=True).indices[:k]
                return order, sims[order]
        '''},
        "test_neighbours_match_reference", "the same call on CPU tensors ran",
    ),
    "cosine_neighbours returns its ids on the CPU": (
        {"embeddings:cosine_neighbours": '''
            def cosine_neighbours(E, token, k):
                if isinstance(token, torch.Tensor) and token.dim() == 1:
                    ids, sims = _top_k(E, token.to(E.device, E.dtype), k, [])
                else:
                    index = _row_index(E, token, "token")
                    ids, sims = _top_k(E, E[index], k, [index])
                return ids.cpu(), sims  # ids to the CPU, to read them
        '''},
        "test_neighbours_match_reference", "came back on cpu",
    ),
    "analogy builds its query in a CPU tensor": (
        {"embeddings:analogy": '''
            def analogy(E, a, b, c, k=1, exclude_inputs=True):
                query = torch.zeros(E.shape[1], dtype=E.dtype)  # on the CPU
                query += E[b] - E[a] + E[c]
                return _top_k(E, query, k, [a, b, c] if exclude_inputs else [])
        '''},
        "test_analogy_direction", "the same call on CPU tensors ran",
    ),
}
