"""The datasets audit: what every paper's data holds against what the papers report (``audit``)
and its report page (``audit_report``)."""
