//! Pure decisions (who may run what), taking plain data.
