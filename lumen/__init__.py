"""lumen: the companion code of "The Embedding Layer", and the reference solution it grades.

Modules, in the chapter's order: ``embeddings`` (the layer, the one-hot identity, cosine
neighbours, the analogy, initialisation), ``params`` (the parameter calculator), ``gpt2`` (a
GPT-2 with weight tying), plus ``tokenizer`` (GPT-2's tokenizer, offline), ``vectors`` (GloVe
word vectors) and ``stages`` (the stages of the exercise). Import the module you need
(``from lumen.embeddings import Embedding``): this file imports nothing, so that
``import lumen.stages`` stays free of torch.
"""
