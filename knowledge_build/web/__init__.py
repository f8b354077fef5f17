"""Web sources: pages of other sites crawled, chunked and kept in the writable store (issue 14)."""
