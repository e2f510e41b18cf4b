//! The storage engine (being built): segmented partition logs with index files.
