//! Stages: trigger and authorize, and posting the report. The GitHub Action front end.
