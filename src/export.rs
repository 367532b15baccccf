//! Writers over the batch stream: Arrow IPC (file, stream), Parquet, CSV, JSON lines.
