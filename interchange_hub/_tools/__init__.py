"""Verification data and reports, on no conversion path: samples, the conversion matrix,
the type corpus and the type-mapping table."""
