"""Measurements of a fitted model and its data that the paper's claims rest on, general enough for any
dataset: the geometry of the question and model embeddings (`geometry`), how clusters of questions
agree with human subject labels (`taxonomy`), how question norms track difficulty (`difficulty`), what
a direction of the space encodes (`probes`) and how aligned a benchmark's questions are (`alignment`).

Built on the core (and `jeirt.baselines` where an IRT fit is compared); never on `jeirt.tasks`, the book
or the command line. The book's pages call these and draw the results (`jeirt_book`)."""
