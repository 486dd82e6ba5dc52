"""Correctness data: which LLM answered which question correctly, and where it comes from.

    dataset      `Dataset` (models x items labels, the item table, embeddings) and one spelling of a name
    csv_tables   a user's CSVs (`read_csv_table`) and a long table as a Dataset (`from_long`, `read_results_csv`)
    local        the datasets of `$JEIRT_DATA/<name>/`, checked against their checksums (`load_local`)
    embedllm     EmbedLLM from the Hugging Face hub (`load_embedllm`)
    loader       `load_dataset`: any of these by name

Splits live in `jeirt.splits`, simulated data in `jeirt.simulate`.
"""

from jeirt.data.csv_tables import (
    CSV_SUFFIXES,
    DUPLICATE_POLICIES,
    LONG_COLUMNS,
    NAME_COLUMNS,
    RepeatedPairs,
    check_names,
    column_name,
    from_long,
    read_csv_table,
    read_items_csv,
    read_questions_csv,
    read_results_csv,
    read_results_table,
    with_validation,
)
from jeirt.data.dataset import ITEM_COLUMNS, Dataset, name_positions, normal_name, normal_names
from jeirt.data.embedllm import EMBEDLLM, EMBEDLLM_DUPLICATES, embedllm_benchmark, embedllm_from_frames, load_embedllm
from jeirt.data.loader import load_dataset
from jeirt.data.local import MANIFEST, load_local, local_datasets, sha256_file, verify_files
