//! Jarvis web app (placeholder until the web-app issue lands).
